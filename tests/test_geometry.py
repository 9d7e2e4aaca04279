"""Geometry queries (issue 24): the tiles whose envelope meets a polygon, line or point, read through
the geometry's own tile cover, by Spark (``sfclayer.read(geometry=...)``), by the driver
(``Layer.query``/``Layer.count``) and in SQL (``sfclayer.system.intersects``, pushed to the scan)."""

import json
import math
import random

import numpy as np
import pytest

shapely = pytest.importorskip("shapely")
from shapely import geometry as sg  # noqa: E402

import sfclayer  # noqa: E402
from sfclayer.errors import InvalidArgument  # noqa: E402
from sfclayer.grid import TileGrid  # noqa: E402

from .helpers import sfclayer_errors  # noqa: E402
from .test_lookup import grid  # noqa: E402
from .test_read import metrics, spark_filters_after_scan  # noqa: E402

EXTENT = (-10.0, 40.0, 15.0, 55.0)  # 50 x 30 tiles of 0.5 degree
BOUNDS = (0, 0, 49, 29)


@pytest.fixture(scope="module")
def layer_path(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("geometry") / "z")
    df = grid(spark, 50, 30, col0=0, row0=0, keep=0.85)
    sfclayer.write(df, path, bounds=BOUNDS, extent=EXTENT, crs="EPSG:4326", block_size="64k", partitions=3)
    return path


@pytest.fixture(scope="module")
def present(spark, layer_path):
    """Every tile of the layer: (col, row) → its envelope."""
    rows = sfclayer.read(spark, layer_path).select("col", "row", "xmin", "ymin", "xmax", "ymax").collect()
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


def brute_force(present, shape):
    """The tiles whose closed envelope meets the shape, tested one by one."""
    return sorted(k for k, env in present.items() if sg.box(*env).intersects(shape))


def spark_keys(spark, path, **kw):
    return sorted((r[0], r[1]) for r in sfclayer.read(spark, path, **kw).select("col", "row").collect())


def random_shape(rng):
    """A random polygon, multipolygon with a hole, line or point, some on tile edges."""
    g = TileGrid(EXTENT, BOUNDS)
    kind = rng.choice(["polygon", "star", "holed", "line", "point", "edge_point", "multi"])
    x, y = rng.uniform(-12, 17), rng.uniform(38, 57)
    if kind == "polygon":
        return sg.Polygon([(x + rng.uniform(-4, 4), y + rng.uniform(-3, 3)) for _ in range(3)]).convex_hull
    if kind == "star":
        pts = []
        for i in range(10):
            r = rng.uniform(0.3, 4) if i % 2 else rng.uniform(2, 6)
            a = i * math.pi / 5
            pts.append((x + r * math.cos(a), y + r * math.sin(a)))
        return shapely.make_valid(sg.Polygon(pts))
    if kind == "holed":
        outer = sg.Point(x, y).buffer(rng.uniform(2, 5))
        return outer.difference(sg.Point(x, y).buffer(rng.uniform(0.5, 1.8)))
    if kind == "line":
        return sg.LineString([(x + rng.uniform(-6, 6), y + rng.uniform(-6, 6)) for _ in range(rng.randint(2, 4))])
    if kind == "point":
        return sg.Point(x, y)
    if kind == "edge_point":  # a tile corner: the four tiles around it all touch it
        c, r = rng.randrange(1, 49), rng.randrange(1, 29)
        return sg.Point(g.xmin(c), g.ymax(r))
    return sg.MultiPolygon([sg.box(x, y, x + 0.3, y + 0.2), sg.box(x + 3, y - 2, x + 3.1, y + 4)])


def test_driver_query_equals_brute_force_on_random_shapes(spark, layer_path, present):
    rng = random.Random(24)
    with sfclayer.open(spark, layer_path) as layer:
        for _ in range(60):
            shape = random_shape(rng)
            want = brute_force(present, shape)
            got = sorted((t["col"], t["row"]) for t in layer.query(geometry=shape))
            assert got == want, shape.wkt
            assert layer.count(geometry=shape) == len(want)


def test_spark_read_equals_brute_force(spark, layer_path, present):
    rng = random.Random(7)
    shapes = [random_shape(rng) for _ in range(4)] + [sg.Point(-10.0, 55.0), sg.Point(100, 100)]
    for shape in shapes:
        assert spark_keys(spark, layer_path, geometry=shape) == brute_force(present, shape), shape.wkt


def test_thin_diagonal_polygon_reads_the_tiles_it_crosses_not_its_bbox(spark, layer_path, present):
    line = sg.LineString([(-9.9, 40.1), (14.9, 54.9)])
    thin = line.buffer(0.01)
    df = sfclayer.read(spark, layer_path, geometry=thin).select("col", "row")
    keys = sorted((r[0], r[1]) for r in df.collect())
    assert keys == brute_force(present, thin)
    by_geometry = metrics(spark, df)
    box = sfclayer.read(spark, layer_path, bbox=thin.bounds).select("col", "row")
    box.collect()
    by_bbox = metrics(spark, box)
    # the bbox is the whole layer (~1,275 tiles); the diagonal crosses ~80
    assert by_geometry["recordsRead"] * 5 < by_bbox["recordsRead"], (by_geometry, by_bbox)
    assert by_geometry["recordsReturned"] == len(keys)


def test_geometry_forms_and_crs(spark, layer_path, present):
    shape = sg.Polygon([(0, 45), (5, 47), (3, 50), (-1, 48)])
    want = brute_force(present, shape)
    forms = [shape.wkt, shapely.to_wkb(shape), shapely.to_wkb(shape, hex=True), shape.__geo_interface__,
             json.dumps(shape.__geo_interface__), {"type": "Feature", "properties": {}, "geometry": shape.__geo_interface__}]
    with sfclayer.open(spark, layer_path) as layer:
        for form in forms:
            assert sorted((t["col"], t["row"]) for t in layer.query(geometry=form)) == want, form
        # the same polygon given in Web Mercator: reprojected into the layer's EPSG:4326
        import pyproj

        to_merc = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True).transform
        merc = shapely.transform(shape, lambda xy: np.column_stack(to_merc(xy[:, 0], xy[:, 1])))
        assert layer.count(geometry=merc, geometry_crs="EPSG:3857") == len(
            brute_force(present, sfclayer.geometry.reproject(merc, "EPSG:3857", "EPSG:4326")))
    assert spark_keys(spark, layer_path, geometry=merc, geometry_crs="EPSG:3857") == sorted(
        brute_force(present, sfclayer.geometry.reproject(merc, "EPSG:3857", "EPSG:4326")))


def test_bad_geometries_are_refused(spark, layer_path, tmp_path):
    bowtie = "POLYGON ((0 45, 5 50, 5 45, 0 50, 0 45))"
    with sfclayer.open(spark, layer_path) as layer:
        for bad in ["POLYGON ((0 0, 1 1", "not a geometry", 42, "POINT EMPTY", bowtie]:
            with pytest.raises(InvalidArgument, match="geometry"):
                layer.count(geometry=bad)
    with pytest.raises(InvalidArgument, match="geometry"):
        sfclayer.read(spark, layer_path, geometry=bowtie)
    with pytest.raises(InvalidArgument, match="geometry_crs"):
        sfclayer.read(spark, layer_path, geometry_crs="EPSG:3857")
    # the connector's own check (SQL users and other languages reach it without Python)
    with pytest.raises(InvalidArgument, match="not a valid polygon"), sfclayer_errors():
        spark.read.format("sfclayer").option("geometry", bowtie).load(layer_path).count()
    no_extent = str(tmp_path / "no-extent")
    sfclayer.write(grid(spark, 4, 4, 0, 0), no_extent, bounds=(0, 0, 3, 3))
    with pytest.raises(InvalidArgument, match="no extent"), sfclayer_errors():
        sfclayer.read(spark, no_extent, geometry="POINT (1 1)").count()


def test_sql_intersects_is_pushed_to_the_scan(spark, layer_path, present):
    thin = sg.LineString([(-9.9, 40.1), (14.9, 54.9)]).buffer(0.01)
    wkt = thin.wkt
    spark.conf.set("spark.sql.catalog.sfclayer", sfclayer.CATALOG)
    df = spark.sql(f"SELECT col, row FROM sfclayer.`{layer_path}` "
                   f"WHERE sfclayer.system.intersects(xmin, ymin, xmax, ymax, '{wkt}')")
    keys = sorted((r[0], r[1]) for r in df.collect())
    assert keys == brute_force(present, thin)
    # answered by the scan (no Filter above it), reading the cover, not the whole layer
    assert not spark_filters_after_scan(df)
    m = metrics(spark, df)
    assert m["recordsRead"] * 5 < len(present), m
    # with another condition beside it, both hold
    both = spark.sql(f"SELECT col, row FROM sfclayer.`{layer_path}` "
                     f"WHERE sfclayer.system.intersects(xmin, ymin, xmax, ymax, '{wkt}') AND col < 20")
    assert sorted((r[0], r[1]) for r in both.collect()) == [k for k in keys if k[0] < 20]


def test_sql_intersects_as_an_ordinary_function(spark):
    spark.conf.set("spark.sql.catalog.sfclayer", sfclayer.CATALOG)
    rows = spark.sql("SELECT sfclayer.system.intersects(x, 0, x + 1, 1, 'POLYGON ((0 0, 2 0, 2 2, 0 2, 0 0))') AS hit "
                     "FROM VALUES (-2.0), (-1.0), (1.5), (3.0) AS t(x) ORDER BY x").collect()
    assert [r.hit for r in rows] == [False, True, True, False]  # (-1..0) touches the polygon's edge
