package io.sfclayer.spark;

import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.GeneralScalarExpression;
import org.apache.spark.sql.connector.expressions.LiteralValue;
import org.apache.spark.sql.connector.expressions.UserDefinedScalarFunc;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

/** Which pushed predicates the scan answers itself: the geometry function over the envelope columns. */
public class IntersectsFunctionTest {
    private static final String WKT = "POLYGON ((0 0, 1 0, 1 1, 0 0))";

    private static Expression call(String canonical, String... columns) {
        Expression[] args = new Expression[columns.length + 1];
        for (int i = 0; i < columns.length; i++) {
            args[i] = Expressions.column(columns[i]);
        }
        args[columns.length] = new LiteralValue<>(UTF8String.fromString(WKT), DataTypes.StringType);
        return new UserDefinedScalarFunc("intersects", canonical, args);
    }

    @Test
    public void theFunctionOverTheEnvelopeColumnsIsRecognised() {
        Expression f = call(IntersectsFunction.CANONICAL_NAME, "xmin", "ymin", "xmax", "ymax");
        assertEquals(WKT, IntersectsFunction.geometryOf(new Predicate("BOOLEAN_EXPRESSION", new Expression[] {f}), true));
        assertEquals(WKT, IntersectsFunction.geometryOf(new Predicate("=", new Expression[] {f,
            new LiteralValue<>(true, DataTypes.BooleanType)}), true));
        // not over the envelope columns in order, another function, false, or a layer without an extent
        Expression swapped = call(IntersectsFunction.CANONICAL_NAME, "ymin", "xmin", "xmax", "ymax");
        assertNull(IntersectsFunction.geometryOf(new Predicate("BOOLEAN_EXPRESSION", new Expression[] {swapped}), true));
        Expression other = call("someone.else", "xmin", "ymin", "xmax", "ymax");
        assertNull(IntersectsFunction.geometryOf(new Predicate("BOOLEAN_EXPRESSION", new Expression[] {other}), true));
        assertNull(IntersectsFunction.geometryOf(new Predicate("=", new Expression[] {f,
            new LiteralValue<>(false, DataTypes.BooleanType)}), true));
        assertNull(IntersectsFunction.geometryOf(new Predicate("BOOLEAN_EXPRESSION", new Expression[] {f}), false));
    }

    @Test
    public void onlyColumnAgainstConstantPredicatesGoToV1Filters() {
        Expression col = Expressions.column("col");
        Expression seven = new LiteralValue<>(7, DataTypes.IntegerType);
        Predicate eq = new Predicate("=", new Expression[] {col, seven});
        assertTrue(SfcLayerScanBuilder.plain(new Predicate("OR", new Expression[] {eq, eq})));
        Expression mod = new GeneralScalarExpression("%", new Expression[] {Expressions.column("v"),
            new LiteralValue<>(2, DataTypes.IntegerType)});
        Predicate even = new Predicate("=", new Expression[] {mod, new LiteralValue<>(0, DataTypes.IntegerType)});
        assertFalse(SfcLayerScanBuilder.plain(new Predicate("OR", new Expression[] {new Predicate("AND",
            new Expression[] {eq, even}), eq})));
    }
}
