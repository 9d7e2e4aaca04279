package io.sfclayer.gtfixtures

import geotrellis.layer._
import geotrellis.proj4._
import geotrellis.raster._
import geotrellis.vector._

/** The layouts the fixture layers use: GeoTrellis' floating layouts in three CRSs, its ZoomedLayoutScheme
  * in WebMercator (256 px: WebMercatorQuad; 16 px: no OGC tile matrix) and in LatLng (square tile counts,
  * so not WorldCRS84Quad), and a LatLng layout that is exactly WorldCRS84Quad. */
final case class Layout(name: String, crs: CRS, layout: LayoutDefinition, zoom: Int)

object Layouts {
  /** MODIS' sinusoidal: a proj4 string with no EPSG code. */
  val Sinusoidal: CRS = CRS.fromString("+proj=sinu +lon_0=0 +x_0=0 +y_0=0 +R=6371007.181 +units=m +no_defs")

  val latlng = Layout("latlng", LatLng,
    LayoutDefinition(Extent(10.0, 40.0, 14.0, 43.0), TileLayout(8, 6, 16, 16)), 0)
  val utm = Layout("utm33n", CRS.fromEpsgCode(32633),
    LayoutDefinition(Extent(500000.0, 4600000.0, 501280.0, 4600960.0), TileLayout(8, 6, 16, 16)), 0)
  val sinusoidal = Layout("sinusoidal", Sinusoidal,
    LayoutDefinition(Extent(-1111950.52, 4447802.08, -1111950.52 + 8 * 7413.0, 4447802.08 + 6 * 7413.0),
      TileLayout(8, 6, 16, 16)), 0)
  /** ZoomedLayoutScheme in WebMercator with 16 px tiles: EPSG:3857, but no OGC tile matrix (those are 256 px). */
  val webMercator16 = Layout("webmercator16", WebMercator, ZoomedLayoutScheme(WebMercator, 16).levelForZoom(4).layout, 4)
  /** ZoomedLayoutScheme in LatLng: 2^z x 2^z tiles over the world (non-square pixels, not WorldCRS84Quad). */
  val latlngZoomed = Layout("latlng-zoomed", LatLng, ZoomedLayoutScheme(LatLng, 16).levelForZoom(3).layout, 3)
  /** ZoomedLayoutScheme(WebMercator, 256) at zoom z: WebMercatorQuad's tile matrix z. */
  def webMercatorQuad(z: Int) = Layout(s"webmercatorquad$z", WebMercator, ZoomedLayoutScheme(WebMercator, 256).levelForZoom(z).layout, z)
  /** WorldCRS84Quad's tile matrix 2: 8 x 4 tiles of 256 px over -180..180 x -90..90. */
  val worldCrs84Quad2 = Layout("worldcrs84quad2", LatLng,
    LayoutDefinition(Extent(-180.0, -90.0, 180.0, 90.0), TileLayout(8, 4, 256, 256)), 2)
  /** The bench layer's layout: 256 x 256 tiles of 32 px over a LatLng box. */
  val bench = Layout("bench", LatLng, LayoutDefinition(Extent(0.0, 0.0, 25.6, 25.6), TileLayout(256, 256, 32, 32)), 0)
}
