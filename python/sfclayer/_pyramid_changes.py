"""What changed in a pyramid's base since the pyramid was built, as the key boxes of Spark queries
(:func:`sfclayer.pyramid`'s incremental update; FORMAT.md section 8).

The base keys that differ between two versions come from the data files one version lists and the
other does not (their col/row statistics give the boxes to compare), joined in Spark on the key and
the tile's values: inserted, replaced and deleted tiles exactly, without reading untouched files.

Examples
--------
>>> from sfclayer._pyramid_changes import _merge_boxes
>>> _merge_boxes([(0, 0, 0, 0), (1, 0, 1, 0), (0, 1, 1, 1)])
[(0, 0, 1, 1)]
"""

import json

from . import _jvm, raster
from . import layer as _layer
from .errors import LayerNotFound

__all__ = []


def _changed_base_keys(spark, path, old_version, md):
    """``(keys, why)``: the base keys whose tile differs between ``old_version`` and ``md``'s version
    (None: rebuild every level), and a sentence saying which."""
    new_version = md["version"]
    if old_version == new_version:
        return set(), f"the pyramid is up to date with version {new_version} of the base"
    try:
        old = json.loads(_jvm.layer_metadata_json(spark, path, old_version))
    except LayerNotFound:
        return None, (f"full rebuild: version {old_version} of the base, which the pyramid was built from, "
                      "is gone (vacuumed), so what changed since is unknown")
    for field in ("keyIndex", "extent", "crs", "raster"):
        if old.get(field) != md.get(field):
            return None, f"full rebuild: the base's {field} changed between versions {old_version} and {new_version}"
    if any("dir" not in f for f in old["files"]):
        return None, f"full rebuild: version {old_version} of the base (format 1) does not say where its files are"
    ops = {v["version"]: v["operation"] for v in _jvm.command(spark, "history", path)}
    overwrites = [u for u in range(old_version + 1, new_version + 1) if ops.get(u) in ("write", "overwrite")]
    if overwrites:
        return None, f"full rebuild: version {overwrites[0]} of the base replaced it whole ({ops[overwrites[0]]})"
    ids = lambda d: {(f["dir"], f["name"]): f for f in d["files"]}  # noqa: E731
    # md may come without its file list (a layer of manifests answers its document alone): read both whole
    before, after = ids(old), ids(json.loads(_jvm.layer_metadata_json(spark, path, new_version)))
    moved = [after[k] for k in after.keys() - before.keys()] + [before[k] for k in before.keys() - after.keys()]
    if sum(int(f["records"]) for f in moved) > max(int(md["recordCount"]), int(old["recordCount"])):
        # Most files were rewritten: comparing them costs a full build's read, and the changed keys
        # would all come to the driver.
        return None, (f"full rebuild: most of the base's data files changed between versions {old_version} "
                      f"and {new_version}")
    boxes = [_file_box(f, md["keyIndex"]) for f in moved]
    old_df = _layer.read(spark, path, version=old_version).where(_boxes_condition(spark, boxes))
    new_df = _layer.read(spark, path, version=new_version).where(_boxes_condition(spark, boxes))
    values = [c for c in raster.COLUMNS if c in new_df.columns]  # no mask column before format 4
    a = old_df.select("col", "row", _sql(spark).struct(*values).alias("v"))
    b = new_df.select("col", "row", _sql(spark).struct(*values).alias("w"))
    diff = a.join(b, ["col", "row"], "full_outer").where(~a["v"].eqNullSafe(b["w"])).select("col", "row")
    keys = {(x["col"], x["row"]) for x in diff.collect()}
    restores = [f"version {u} restored an earlier version" for u in range(old_version + 1, new_version + 1)
                if ops.get(u) == "restore"]
    return keys, (f"incremental update from version {old_version} to {new_version} of the base: "
                  f"{len(keys)} changed tiles in {len(moved)} added or dropped data files"
                  + "".join(f" ({r})" for r in restores))


def _file_box(f, ki):
    """A data file's key box ``(c0, r0, c1, r1)``: its statistics', else the whole key bounds."""
    stats = f.get("stats") or {}
    c, r = stats.get("col") or {}, stats.get("row") or {}
    if None in (c.get("min"), c.get("max"), r.get("min"), r.get("max")) or c.get("unknown") or r.get("unknown"):
        return (ki["colMin"], ki["rowMin"], ki["colMax"], ki["rowMax"])
    return (int(c["min"]), int(r["min"]), int(c["max"]), int(r["max"]))


# The connector translates an OR of up to this many key boxes exactly (FilterTranslator.MAX_BOXES).
_MAX_BOXES = 64


def _boxes_condition(spark, boxes):
    """A Spark condition holding the keys of ``boxes`` (a superset hull beyond :data:`_MAX_BOXES`)."""
    boxes = list(boxes)
    if not boxes:
        return _sql(spark).lit(False)
    if len(boxes) > _MAX_BOXES:
        boxes = [(min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                  max(b[3] for b in boxes))]
    cond = None
    for c0, r0, c1, r1 in boxes:
        one = _sql(spark).col("col").between(int(c0), int(c1)) & _sql(spark).col("row").between(int(r0), int(r1))
        cond = one if cond is None else cond | one
    return cond


def _merge_boxes(boxes):
    """Fewer boxes covering exactly the same keys: per row, runs of columns; then equal runs of
    consecutive rows stacked."""
    keys = {(c, r) for c0, r0, c1, r1 in boxes for c in range(c0, c1 + 1) for r in range(r0, r1 + 1)}
    runs = []  # (c0, c1, r), by row then column
    for c, r in sorted(keys, key=lambda k: (k[1], k[0])):
        if runs and runs[-1][2] == r and runs[-1][1] == c - 1:
            runs[-1] = (runs[-1][0], c, r)
        else:
            runs.append((c, c, r))
    open_, out = {}, []  # (c0, c1) -> [c0, r0, c1, r1] still growing downwards
    for c0, c1, r in runs:
        box = open_.get((c0, c1))
        if box is not None and box[3] == r - 1:
            box[3] = r
        else:
            if box is not None:
                out.append(tuple(box))
            open_[(c0, c1)] = [c0, r, c1, r]
    out.extend(tuple(b) for b in open_.values())
    return sorted(out, key=lambda b: (b[1], b[0]))


def _sql(spark):
    """The column functions of ``spark``'s kind, imported when Spark is in use: pyspark.sql.functions
    builds classic or Connect columns by the process's mode, not the session's (a process may hold both)."""
    return _jvm.transport(spark).functions()
