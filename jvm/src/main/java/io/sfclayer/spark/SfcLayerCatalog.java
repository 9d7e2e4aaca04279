package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.spark.procedures.CompactProcedure;
import io.sfclayer.spark.procedures.DeleteProcedure;
import io.sfclayer.spark.procedures.HistoryProcedure;
import io.sfclayer.spark.procedures.RestoreProcedure;
import io.sfclayer.spark.procedures.VacuumProcedure;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A Spark catalog holding sfclayer's maintenance as SQL procedures (Spark 4's {@link ProcedureCatalog}),
 * named as Iceberg names its own: {@code CALL <catalog>.system.<procedure>(...)}. Register it with
 * {@code spark.sql.catalog.sfclayer=io.sfclayer.spark.SfcLayerCatalog} ({@code sfclayer.session()} does),
 * then e.g. {@code CALL sfclayer.system.vacuum(path => '/layers/dem', retain => '7d', dry_run => true)}.
 *
 * <p>It also names layers by path as tables, read-only, so that SQL reaches time travel, which Spark
 * allows only through a catalog: {@code SELECT * FROM sfclayer.`/layers/dem` VERSION AS OF 3} (or
 * {@code TIMESTAMP AS OF '2026-01-01'}); {@code DELETE FROM sfclayer.`/layers/dem` WHERE ...} works as
 * on any sfclayer table. It lists no tables and creates, alters, renames and drops none: layers are
 * written with {@code df.write.format("sfclayer")}.
 *
 * <p>Its one function, {@code <catalog>.system.intersects(xmin, ymin, xmax, ymax, 'POLYGON((...))')}
 * ({@link IntersectsFunction}), is the geometry predicate sfclayer scans take pushed down.
 */
public final class SfcLayerCatalog implements ProcedureCatalog, TableCatalog, FunctionCatalog {
    /** The one namespace of procedures. */
    public static final String SYSTEM = "system";

    private static final Map<String, Supplier<UnboundProcedure>> PROCEDURES = new LinkedHashMap<>();

    static {
        PROCEDURES.put(CompactProcedure.NAME, CompactProcedure::new);
        PROCEDURES.put(DeleteProcedure.NAME, DeleteProcedure::new);
        PROCEDURES.put(HistoryProcedure.NAME, HistoryProcedure::new);
        PROCEDURES.put(RestoreProcedure.NAME, RestoreProcedure::new);
        PROCEDURES.put(VacuumProcedure.NAME, VacuumProcedure::new);
    }

    private String name = "sfclayer";

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public UnboundProcedure loadProcedure(Identifier ident) {
        // case-insensitive, as Spark resolves functions (and Iceberg its procedures)
        Supplier<UnboundProcedure> p = isSystem(ident.namespace())
            ? PROCEDURES.get(ident.name().toLowerCase(Locale.ROOT)) : null;
        if (p == null) {
            throw new SfcLayerException.InvalidArgument("procedure " + name + "." + String.join(".", ident.namespace())
                + (ident.namespace().length > 0 ? "." : "") + ident.name() + ": no such procedure (sfclayer's are "
                + name + "." + SYSTEM + "." + String.join(", ", PROCEDURES.keySet()) + ")");
        }
        return p.get();
    }

    @Override
    public Identifier[] listProcedures(String[] namespace) {
        if (!isSystem(namespace)) {
            return new Identifier[0];
        }
        return PROCEDURES.keySet().stream().map(n -> Identifier.of(new String[] {SYSTEM}, n)).toArray(Identifier[]::new);
    }

    @Override
    public Identifier[] listFunctions(String[] namespace) {
        return isSystem(namespace) ? new Identifier[] {Identifier.of(new String[] {SYSTEM}, IntersectsFunction.NAME)}
            : new Identifier[0];
    }

    @Override
    public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
        if (isSystem(ident.namespace()) && ident.name().equalsIgnoreCase(IntersectsFunction.NAME)) {
            return new IntersectsFunction();
        }
        throw new NoSuchFunctionException(ident);
    }

    /** The layer at the path {@code ident} names (no namespace), newest version. */
    @Override
    public Table loadTable(Identifier ident) throws NoSuchTableException {
        return table(ident, Map.of());
    }

    /** {@code VERSION AS OF v}: the read option versionAsOf, with its checks and errors. */
    @Override
    public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
        return table(ident, Map.of(ReadOptions.VERSION_AS_OF, version));
    }

    /** {@code TIMESTAMP AS OF t} (Spark passes epoch microseconds): the read option timestampAsOf. */
    @Override
    public Table loadTable(Identifier ident, long timestampMicros) throws NoSuchTableException {
        return table(ident, Map.of(ReadOptions.TIMESTAMP_AS_OF, Long.toString(timestampMicros)));
    }

    private static Table table(Identifier ident, Map<String, String> options) throws NoSuchTableException {
        if (ident.namespace().length > 0) {
            throw new NoSuchTableException(ident); // a layer is one path: sfclayer.`/layers/dem`
        }
        Map<String, String> all = new HashMap<>(options);
        all.put(ReadOptions.PATH, ident.name());
        SfcLayerTable table = new SfcLayerTable(all);
        table.schema(); // opens the layer: LayerNotFound (naming the path) or a bad version, here
        return table;
    }

    /** Whether a layer is there (Spark asks before CREATE TABLE; a missing layer is no error here). */
    @Override
    public boolean tableExists(Identifier ident) {
        try {
            loadTable(ident);
            return true;
        } catch (NoSuchTableException | SfcLayerException.LayerNotFound e) {
            return false;
        }
    }

    @Override
    public Identifier[] listTables(String[] namespace) {
        return new Identifier[0];
    }

    @Override
    public Table createTable(Identifier ident, TableInfo info) {
        throw readOnly("CREATE TABLE");
    }

    @Override
    public Table createTable(Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties) {
        throw readOnly("CREATE TABLE");
    }

    @Override
    public Table alterTable(Identifier ident, TableChange... changes) {
        throw readOnly("ALTER TABLE");
    }

    @Override
    public boolean dropTable(Identifier ident) {
        throw readOnly("DROP TABLE");
    }

    @Override
    public void renameTable(Identifier from, Identifier to) {
        throw readOnly("RENAME TABLE");
    }

    private SfcLayerException readOnly(String what) {
        return new SfcLayerException.InvalidArgument(what + ": catalog " + name + " only reads layers by path"
            + " (write them with df.write.format(\"sfclayer\"), remove old versions with CALL " + name
            + ".system.vacuum)");
    }

    private static boolean isSystem(String[] namespace) {
        return namespace.length == 1 && namespace[0].equalsIgnoreCase(SYSTEM);
    }

    @Override
    public String toString() {
        return "SfcLayerCatalog(" + name + ": " + Arrays.toString(PROCEDURES.keySet().toArray()) + ")";
    }
}
