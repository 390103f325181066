"""Reading a model file of any format oocboost reads, told apart by its content: its own
JSON (``Model.save_model``), XGBoost's JSON or UBJSON model, LightGBM's text model. The
estimate of what the load needs is checked against the memory limit first; the bytes
are read once, bounded, and parsed by the format's checked reader.
"""
from __future__ import annotations

import os

from ..errors import MemoryLimitError, ModelError
from ..utils.jsonio import parse, read_bytes
from .fields import compact_lists

#: Peak bytes :func:`read_model_file` holds per byte of model file: the text, then the
#: trees' arrays as each tree is parsed. Measured 3.0 (69 MiB above the imports for a
#: 23 MiB file of 120 depth-10 trees; 5.0 before trees were compacted while parsed).
LOAD_BYTES_PER_FILE_BYTE = 3.5
#: UBJSON's type markers that may follow an object's opening ``{`` (a key's length type,
#: or an optimized container's ``$`` / ``#``); JSON text has a quote, space or ``}``.
_UBJSON_AFTER_BRACE = b"iUIlL$#"


def model_file_kind(head: bytes) -> str:
    """"xgboost-ubjson", "lightgbm" or "json" (oocboost's or XGBoost's, and anything
    else, which the JSON parser then refuses naming the fault) from a file's first
    bytes."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{") and text[1:2] and text[1:2] in _UBJSON_AFTER_BRACE:
        return "xgboost-ubjson"
    if text.startswith(b"tree\n") or text.startswith(b"tree\r\n"):
        return "lightgbm"
    return "json"


def read_model_file(path, *, max_bytes: int, model_class, memory_limit=None):
    """The validated ``model_class`` (:class:`~oocboost.model.model.Model`, whose module
    calls this) in ``path`` (bytes: at most ``max_bytes``); see
    :func:`oocboost.load_model`."""
    from .formats import lightgbm_import, ubjson, xgboost_import

    name = os.fspath(path)
    where = f"model file {name}"
    _check_load_fits(name, memory_limit)
    try:
        box = [read_bytes(name, max_bytes=max_bytes, error=ModelError, what="model file")]
        kind = model_file_kind(box[0][:64])
        if kind == "lightgbm":
            return lightgbm_import.from_lightgbm_text(box.pop(), where, model_class)
        if kind == "xgboost-ubjson":
            doc = ubjson.decode(box.pop(), where)
        else:
            # the bytes are handed over (box.pop()), so parse frees them once decoded
            doc = parse(box.pop(), error=ModelError, where=where, object_hook=compact_lists)
    except MemoryError:
        raise MemoryLimitError(f"{where}: out of memory while parsing it; free memory or "
                               f"load it on a larger machine") from None
    if xgboost_import.is_xgboost_document(doc):
        return xgboost_import.from_xgboost_document(doc, where, model_class)
    if kind == "xgboost-ubjson":
        raise ModelError(f"{where}: a UBJSON document that is not an XGBoost model")
    return model_class.from_json_dict(doc, source=repr(name))


def _check_load_fits(name, memory_limit):
    import psutil

    from ..utils.rss import current_rss
    from ..utils.sizes import format_size, parse_size

    try:
        size = os.stat(name).st_size
    except OSError:
        return  # read_bytes names what is wrong
    need = int(LOAD_BYTES_PER_FILE_BYTE * size)
    limit = parse_size(memory_limit)
    if limit is not None:
        room, what = limit - current_rss(), f"left under the memory limit {format_size(limit)}"
    else:
        room, what = psutil.virtual_memory().available, "of memory available"
    if need > room:
        raise MemoryLimitError(f"model file {name} ({format_size(size)}) needs about "
                               f"{format_size(need)} to load, more than the "
                               f"{format_size(max(room, 0))} {what}")
