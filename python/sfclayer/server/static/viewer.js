// sfclayer's web map viewer: one Leaflet tile layer per served layer, a layer switcher, the layer's
// extent fitted, the tile under the mouse (col,row and its data file), a time slider for
// space-time layers. Layers on WebMercatorQuad use Leaflet's EPSG:3857; every other grid (lon/lat
// extents, projected or plain key grids) gets a CRS built from its extent, so a layer's tile
// (col, row) at its zoom is Leaflet's tile (x, y) at that zoom.
(function () {
  "use strict";
  var base = document.location.pathname.replace(/[^/]*$/, "");
  var viewer = window.sfclayerViewer = { map: null, layers: {}, current: null, loading: 0, tilesLoaded: 0 };

  function gridCrs(info) {
    var g = info.grid, zN = info.zooms[info.zooms.length - 1];
    var kb = g.keyBounds, ncols = kb[2] - kb[0] + 1, nrows = kb[3] - kb[1] + 1;
    var ext = g.extent || [kb[0], -kb[3] - 1, kb[2] + 1, -kb[1]];
    var tw = (ext[2] - ext[0]) / ncols, th = (ext[3] - ext[1]) / nrows;
    var px = g.tileWidth || 256, py = g.tileHeight || 256;
    var x0 = ext[0] - kb[0] * tw, y0 = ext[3] + kb[1] * th;   // the corner of tile (0, 0)
    var a = px / (tw * Math.pow(2, zN)), c = py / (th * Math.pow(2, zN));
    return L.extend({}, L.CRS.Simple, {
      projection: L.Projection.LonLat,
      transformation: new L.Transformation(a, -a * x0, -c, c * y0),
      infinite: true
    });
  }

  function isMercator(info) { return info.grid.tms === "WebMercatorQuad"; }

  function extentBounds(info) {
    var g = info.grid, kb = g.keyBounds;
    if (isMercator(info) && info.lonlatBounds) {
      var b = info.lonlatBounds;
      return L.latLngBounds([b[1], b[0]], [b[3], b[2]]);
    }
    var e = g.extent || [kb[0], -kb[3] - 1, kb[2] + 1, -kb[1]];
    return L.latLngBounds([e[1], e[0]], [e[3], e[2]]);
  }

  // Bounds a hair inside the extent: Leaflet would also ask for the tiles that only touch its edges.
  function inside(b) {
    var dy = (b.getNorth() - b.getSouth()) * 1e-9, dx = (b.getEast() - b.getWest()) * 1e-9;
    return L.latLngBounds([b.getSouth() + dy, b.getWest() + dx], [b.getNorth() - dy, b.getEast() - dx]);
  }

  function timeBins(info) {
    var tb = info.timeBounds;
    if (!tb) return [];
    var out = [], step = Math.max(tb.resolution, 1);
    for (var t = tb.min; t <= tb.max && out.length < 10000; t += step) out.push(t);
    return out;
  }

  function iso(micros) { return new Date(micros / 1000).toISOString(); }

  function tileUrl(info, micros) {
    var q = micros == null ? "" : "?time=" + encodeURIComponent(iso(micros));
    return base + "layers/" + encodeURIComponent(info.name) + "/tiles/{z}/{x}/{y}.png" + q;
  }

  function setStatus() {
    document.getElementById("status").textContent =
      viewer.loading ? "loading " + viewer.loading + " tile(s)…" : viewer.tilesLoaded + " tile(s) loaded";
  }

  function makeLayer(info) {
    var zs = info.zooms, bins = timeBins(info);
    var layer = L.tileLayer(tileUrl(info, bins.length ? bins[0] : null), {
      tileSize: L.point(info.grid.tileWidth || 256, info.grid.tileHeight || 256),
      minNativeZoom: zs[0], maxNativeZoom: zs[zs.length - 1], minZoom: -20, maxZoom: 30,
      noWrap: true, keepBuffer: 1, errorTileUrl: "", bounds: inside(extentBounds(info))
    });
    layer.on("tileloadstart", function () { viewer.loading++; setStatus(); });
    layer.on("tileload tileerror", function (e) {
      viewer.loading = Math.max(0, viewer.loading - 1);
      if (e.type === "tileload") viewer.tilesLoaded++;
      else if (e.tile) e.tile.classList.add("sfclayer-tile-missing");  // no tile at that key: a 404
      setStatus();
    });
    layer.sfclayer = { info: info, bins: bins, time: bins.length ? bins[0] : null };
    return layer;
  }

  var keyCache = {}, pendingKey = null;
  function showKey(info, z, col, row, micros) {
    var box = document.getElementById("under-mouse");
    var id = info.name + "/" + z + "/" + col + "/" + row + "/" + micros;
    box.textContent = "tile " + col + "," + row + (info.zooms.length > 1 ? " (zoom " + z + ")" : "");
    box.dataset.col = col; box.dataset.row = row;
    var label = box.textContent;
    if (keyCache[id] !== undefined) { box.textContent = label + " " + keyCache[id]; return; }
    if (pendingKey) clearTimeout(pendingKey);
    pendingKey = setTimeout(function () {
      var url = base + "layers/" + encodeURIComponent(info.name) + "/keys/" + col + "/" + row + "?z=" + z +
        (micros == null ? "" : "&time=" + encodeURIComponent(iso(micros)));
      fetch(url).then(function (r) { return r.json(); }).then(function (k) {
        keyCache[id] = k.inBounds ? ("in " + (k.file || "no file") +
          (k.deltas ? " + " + k.deltas.length + " delta file" + (k.deltas.length > 1 ? "s" : "") : "") +
          " (index " + k.index + ")") : "(outside the layer)";
        if (box.dataset.col == col && box.dataset.row == row) box.textContent = label + " " + keyCache[id];
      });
    }, 120);
  }

  function onMouseMove(e) {
    var layer = viewer.current;
    if (!layer) return;
    var info = layer.sfclayer.info, zs = info.zooms;
    var z = Math.max(zs[0], Math.min(zs[zs.length - 1], Math.round(viewer.map.getZoom())));
    var p = viewer.map.project(e.latlng, z);
    var ts = layer.getTileSize();
    showKey(info, z, Math.floor(p.x / ts.x), Math.floor(p.y / ts.y), layer.sfclayer.time);
  }

  function showTimeSlider(layer) {
    var box = document.getElementById("time-box"), slider = document.getElementById("time-slider");
    var bins = layer.sfclayer.bins;
    box.hidden = bins.length === 0;
    if (!bins.length) return;
    slider.max = bins.length - 1;
    slider.value = Math.max(0, bins.indexOf(layer.sfclayer.time));
    document.getElementById("time-label").textContent = iso(layer.sfclayer.time);
    slider.oninput = function () {
      layer.sfclayer.time = bins[+slider.value];
      document.getElementById("time-label").textContent = iso(layer.sfclayer.time);
      layer.setUrl(tileUrl(layer.sfclayer.info, layer.sfclayer.time));
    };
  }

  function mapFor(info) {
    // One Leaflet map per CRS: switching to a layer on another grid rebuilds the map.
    if (viewer.map) { viewer.map.remove(); }
    var map = L.map("map", { crs: isMercator(info) ? L.CRS.EPSG3857 : gridCrs(info), zoomSnap: 1,
                             minZoom: info.zooms[0] - 4, maxZoom: info.zooms[info.zooms.length - 1] + 4,
                             attributionControl: false });
    map.on("mousemove", onMouseMove);
    viewer.map = map;
    return map;
  }

  function show(name) {
    var infos = viewer.infos, info = infos[name];
    var map = mapFor(info);
    var overlays = {};
    // Layers on the same grid as the chosen one share the map; the others switch it.
    Object.keys(infos).forEach(function (n) {
      var same = JSON.stringify(infos[n].grid.tms) === JSON.stringify(info.grid.tms) &&
                 (info.grid.tms === "WebMercatorQuad" || n === name ||
                  JSON.stringify([infos[n].grid.extent, infos[n].grid.keyBounds, infos[n].zooms]) ===
                  JSON.stringify([info.grid.extent, info.grid.keyBounds, info.zooms]));
      viewer.layers[n] = same ? makeLayer(infos[n]) : null;
      if (viewer.layers[n]) overlays[n] = viewer.layers[n];
    });
    var current = viewer.layers[name];
    current.addTo(map);
    viewer.current = current;
    L.control.layers(overlays, null, { collapsed: false }).addTo(map);
    map.on("baselayerchange", function (e) {
      viewer.current = e.layer;
      document.getElementById("layer-name").textContent = e.layer.sfclayer.info.name;
      showTimeSlider(e.layer);
      history.replaceState(null, "", "#" + encodeURIComponent(e.layer.sfclayer.info.name));
    });
    var others = Object.keys(infos).filter(function (n) { return !viewer.layers[n]; });
    if (others.length) {
      var ctl = L.control({ position: "topright" });
      ctl.onAdd = function () {
        var div = L.DomUtil.create("div", "leaflet-bar leaflet-control");
        div.style.background = "#fff"; div.style.padding = "4px";
        div.innerHTML = "other grids: ";
        others.forEach(function (n) {
          var a = L.DomUtil.create("a", "", div);
          a.href = "#" + encodeURIComponent(n); a.textContent = n; a.style.display = "inline"; a.style.width = "auto";
          a.onclick = function (ev) { ev.preventDefault(); history.replaceState(null, "", "#" + encodeURIComponent(n)); show(n); };
        });
        return div;
      };
      ctl.addTo(map);
    }
    map.fitBounds(extentBounds(info));
    document.getElementById("layer-name").textContent = name;
    showTimeSlider(current);
  }

  fetch(base + "layers").then(function (r) { return r.json(); }).then(function (doc) {
    viewer.infos = {};
    doc.layers.forEach(function (info) { viewer.infos[info.name] = info; });
    var names = Object.keys(viewer.infos);
    if (!names.length) { document.getElementById("status").textContent = "no layers served"; return; }
    var wanted = decodeURIComponent(document.location.hash.replace(/^#/, ""));
    show(viewer.infos[wanted] ? wanted : names[0]);
    viewer.ready = true;
  });
})();
