"""The data files of a version document read from local files: listed inline (formats 2-5), or through
the document's manifests (format 6, docs/FORMAT.md section 10). For tests and benchmarks that read a
local layer's documents directly; everything else gets documents from the JVM with ``files`` filled in."""

import json
import os

__all__ = ["document_files"]


def document_files(layer_path, doc):
    """The ``files`` entries of version document ``doc`` of the local layer at ``layer_path``.

    Parameters
    ----------
    layer_path : str
        The layer's directory.
    doc : dict
        A parsed version document of that layer.

    Returns
    -------
    list of dict
        The data file entries, sorted by first index (format 6: read from every manifest).
    """
    if "manifests" not in doc:
        return list(doc.get("files") or [])
    out = []

    def walk(refs):
        for ref in refs:
            with open(os.path.join(layer_path, "_sfclayer", "manifests", ref["path"]), "rb") as f:
                m = json.load(f)
            if ref["level"] == 0:
                out.extend(m["files"])
            else:
                walk(m["manifests"])

    walk(doc["manifests"])
    return out
