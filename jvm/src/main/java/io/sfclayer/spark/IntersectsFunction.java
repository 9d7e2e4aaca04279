package io.sfclayer.spark;

import io.sfclayer.layer.GeometryCover;
import io.sfclayer.layer.TileGrid;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.UserDefinedScalarFunc;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.locationtech.jts.geom.Geometry;

import java.util.Locale;

/**
 * {@code sfclayer.system.intersects(xmin, ymin, xmax, ymax, geometry)}: whether the closed box meets the
 * geometry (WKT, or WKB as hexadecimal, in the same CRS). A function of the {@code sfclayer} catalog, so
 * any query can call it; on an sfclayer table whose envelope columns are its first four arguments and
 * whose geometry is a constant, Spark 4.3 hands it to the scan as a V2 predicate (a
 * {@code BOOLEAN_EXPRESSION} predicate around the function; {@code f(...) = true} is taken too) and the
 * scan reads only the geometry's tile cover ({@link SfcLayerScanBuilder}).
 */
public final class IntersectsFunction implements UnboundFunction {
    public static final String NAME = "intersects";
    /** What the scan recognises the function by (Spark passes it with the pushed predicate). */
    static final String CANONICAL_NAME = "io.sfclayer.intersects";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String description() {
        return NAME + "(xmin, ymin, xmax, ymax, geometry): whether the closed box meets the geometry (WKT or"
            + " hex WKB); on sfclayer tables, pushed down as the geometry's tile cover";
    }

    @Override
    public BoundFunction bind(StructType input) {
        StructField[] f = input.fields();
        boolean ok = f.length == 5 && f[4].dataType() instanceof StringType;
        for (int i = 0; ok && i < 4; i++) {
            ok = f[i].dataType() instanceof NumericType;
        }
        if (!ok) {
            throw new UnsupportedOperationException(NAME + ": takes (xmin, ymin, xmax, ymax, geometry): four numbers"
                + " and a WKT string, got " + input.simpleString());
        }
        return new Bound();
    }

    /** The bound function: Spark casts the box to doubles; the last geometry parsed is kept (usually a constant). */
    static final class Bound implements ScalarFunction<Boolean> {
        private transient String lastText;
        private transient Geometry last;

        @Override
        public DataType[] inputTypes() {
            return new DataType[] {DataTypes.DoubleType, DataTypes.DoubleType, DataTypes.DoubleType,
                DataTypes.DoubleType, DataTypes.StringType};
        }

        @Override
        public DataType resultType() {
            return DataTypes.BooleanType;
        }

        @Override
        public String name() {
            return NAME;
        }

        @Override
        public String canonicalName() {
            return CANONICAL_NAME;
        }

        @Override
        public Boolean produceResult(InternalRow row) {
            for (int i = 0; i < 5; i++) {
                if (row.isNullAt(i)) {
                    return null;
                }
            }
            String text = row.getUTF8String(4).toString();
            if (!text.equals(lastText)) {
                last = GeometryCover.parse(text);
                lastText = text;
            }
            return GeometryCover.intersects(last, row.getDouble(0), row.getDouble(1), row.getDouble(2), row.getDouble(3));
        }
    }

    /**
     * The geometry text of a pushed predicate that is this function over the table's envelope columns
     * ({@code xmin, ymin, xmax, ymax}, in that order) and a constant geometry, as Spark wraps a boolean
     * function: {@code BOOLEAN_EXPRESSION(f(...))}, or {@code f(...) = true}; null for any other
     * predicate (Spark then evaluates it).
     */
    static String geometryOf(Predicate p, boolean hasExtent) {
        if (!hasExtent) {
            return null;
        }
        Expression a;
        if ("BOOLEAN_EXPRESSION".equals(p.name()) && p.children().length == 1) {
            a = p.children()[0];
        } else if ("=".equals(p.name()) && p.children().length == 2) {
            a = p.children()[0];
            Expression b = p.children()[1];
            if (a instanceof Literal) {
                Expression t = a;
                a = b;
                b = t;
            }
            if (!(b instanceof Literal) || !Boolean.TRUE.equals(((Literal<?>) b).value())) {
                return null;
            }
        } else {
            return null;
        }
        if (!(a instanceof UserDefinedScalarFunc)) {
            return null;
        }
        UserDefinedScalarFunc f = (UserDefinedScalarFunc) a;
        if (!CANONICAL_NAME.equals(f.canonicalName()) || f.children().length != 5) {
            return null;
        }
        for (int i = 0; i < 4; i++) {
            Expression c = f.children()[i];
            if (!(c instanceof NamedReference) || ((NamedReference) c).fieldNames().length != 1
                    || !((NamedReference) c).fieldNames()[0].toLowerCase(Locale.ROOT).equals(TileGrid.COLUMNS.get(i))) {
                return null;
            }
        }
        Expression g = f.children()[4];
        if (!(g instanceof Literal) || !(((Literal<?>) g).value() instanceof UTF8String)) {
            return null;
        }
        return ((Literal<?>) g).value().toString();
    }
}
