package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.spark.procedures.CompactProcedure;
import io.sfclayer.spark.procedures.HistoryProcedure;
import io.sfclayer.spark.procedures.VacuumProcedure;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A Spark catalog holding sfclayer's maintenance as SQL procedures (Spark 4's {@link ProcedureCatalog}),
 * named as Iceberg names its own: {@code CALL <catalog>.system.<procedure>(...)}. Register it with
 * {@code spark.sql.catalog.sfclayer=io.sfclayer.spark.SfcLayerCatalog} ({@code sfclayer.session()} does),
 * then e.g. {@code CALL sfclayer.system.vacuum(path => '/layers/dem', retain => '7d', dry_run => true)}.
 * Layers are named by path in the arguments, so the catalog holds no tables.
 */
public final class SfcLayerCatalog implements ProcedureCatalog {
    /** The one namespace of procedures. */
    public static final String SYSTEM = "system";

    private static final Map<String, Supplier<UnboundProcedure>> PROCEDURES = new LinkedHashMap<>();

    static {
        PROCEDURES.put(CompactProcedure.NAME, CompactProcedure::new);
        PROCEDURES.put(HistoryProcedure.NAME, HistoryProcedure::new);
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

    private static boolean isSystem(String[] namespace) {
        return namespace.length == 1 && namespace[0].equalsIgnoreCase(SYSTEM);
    }

    @Override
    public String toString() {
        return "SfcLayerCatalog(" + name + ": " + Arrays.toString(PROCEDURES.keySet().toArray()) + ")";
    }
}
