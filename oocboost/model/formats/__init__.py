"""Models out to the formats they are served and inspected in: one adapter module per
foreign format, translating the core's flat trees (``common.py``), each checked by the
foreign library's own predictor in the tests.

========  ==========================================  ============================
format    file                                        read by
========  ==========================================  ============================
lightgbm  LightGBM's text model (``.txt``)            ``lightgbm.Booster(model_file=)``
xgboost   XGBoost's JSON (``format="xgboost"``), UBJSON  ``xgboost.Booster(model_file=)``
          (``.ubj``)
onnx      ONNX (``.onnx``)                            ``onnxruntime.InferenceSession``
treelite  Treelite's checkpoint (``.tl``)             ``treelite.Model.deserialize``
========  ==========================================  ============================

A categorical feature goes to every format as its category's position in the model's
list (:func:`~oocboost.model.formats.common.category_lists`; :meth:`ModelExport.export_input`
encodes data so).
"""
from __future__ import annotations

import os

import numpy as np

from ...common import category_index
from ...errors import ParameterError
from ...utils.files import write_bytes_atomic, write_text_atomic

#: Export format -> (file extensions it is chosen by, what it is).
FORMATS = {
    "lightgbm": ((".txt",), "LightGBM's text model"),
    # .json is oocboost's own model file: XGBoost's JSON is written only when named
    "xgboost": ((".ubj",), "XGBoost's JSON model (UBJSON for .ubj)"),
    "onnx": ((".onnx",), "ONNX model"),
    "treelite": ((".tl",), "Treelite checkpoint"),
}


def format_of(path: str | os.PathLike, fmt: str | None) -> str:
    """The export format: ``fmt`` when given, else the one ``path``'s extension names."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise ParameterError(f"export format must be one of {', '.join(FORMATS)}, got "
                                 f"{fmt!r}")
        return fmt
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext == ".json":
        raise ParameterError(f"{os.fspath(path)}: a .json file is oocboost's own model "
                             f"(save_model); say format='xgboost' (--format xgboost) for "
                             f"XGBoost's JSON model")
    for name, (extensions, _) in FORMATS.items():
        if ext in extensions:
            return name
    known = ", ".join(f"{e} ({n})" for n, (es, _) in FORMATS.items() for e in es)
    raise ParameterError(f"{os.fspath(path)}: say the export format (format=...: "
                         f"{', '.join(FORMATS)}); the extension {ext or '(none)'!r} names "
                         f"none ({known})")


class ModelExport:
    """:meth:`export` of :class:`~oocboost.model.model.Model`."""

    def export(self, path: str | os.PathLike, format: str | None = None) -> str:
        """Write the model in a foreign format, atomically (a failed export leaves no
        file and an existing one unchanged).

        Parameters
        ----------
        path : str or os.PathLike
        format : {"lightgbm", "xgboost", "onnx", "treelite"} or None
            None: from the extension (``.txt``: LightGBM, ``.onnx``: ONNX, ``.tl``:
            Treelite, ``.ubj``: XGBoost's UBJSON); XGBoost's JSON must be named
            (``.json`` is oocboost's own model file).

        Returns
        -------
        str
            The format written.

        Raises
        ------
        ModelError
            The format cannot express the model: the message names what (a feature's
            categorical splits, an objective, oblique splits...).

        Examples
        --------
        >>> model.export("model.txt")                                  # doctest: +SKIP
        'lightgbm'
        >>> lightgbm.Booster(model_file="model.txt").predict(X)        # doctest: +SKIP
        """
        fmt = format_of(path, format)
        self.validate()
        if fmt == "lightgbm":
            from .lightgbm_text import to_lightgbm_text

            write_text_atomic(path, to_lightgbm_text(self))
        elif fmt == "xgboost" and str(path).lower().endswith(".ubj"):
            from .xgboost_json import to_xgboost_ubjson

            write_bytes_atomic(path, to_xgboost_ubjson(self))
        elif fmt == "xgboost":
            from .xgboost_json import to_xgboost_json

            write_text_atomic(path, to_xgboost_json(self))
        elif fmt == "onnx":
            from .onnx_model import to_onnx_bytes

            write_bytes_atomic(path, to_onnx_bytes(self))
        else:
            from .treelite_model import to_treelite_bytes

            write_bytes_atomic(path, to_treelite_bytes(self))
        return fmt

    def export_input(self, X, read_options: dict | None = None) -> np.ndarray:
        """``X`` as exported models take it: (n_rows, n_features) float64 in the model's
        feature order, numeric features as they are, a categorical one as its category's
        position in the model's list (``"other"``'s for unseen categories when the
        feature has one, else NaN), NaN for missing.

        Parameters
        ----------
        X : array, DataFrame, Arrow table or file path
            Anything :meth:`predict` reads.
        read_options : dict, optional
            How a text file is read, as for :meth:`predict`.

        Examples
        --------
        >>> session = onnxruntime.InferenceSession("model.onnx")      # doctest: +SKIP
        >>> session.run(["prediction"], {"X": model.export_input(frame)})  # doctest: +SKIP
        """
        from ..predict import raw_matrices

        blocks = list(raw_matrices(self, X, read_options))
        out = np.concatenate(blocks) if blocks else np.empty((0, self.n_features))
        max_bin = self.max_bin
        for f, kind in enumerate(self.feature_types):
            if kind != "numeric" and max_bin is not None:
                codes = out[:, f]
                known = ~np.isnan(codes)
                codes[known] = category_index(codes[known].astype(np.int64), max_bin)
        return out
