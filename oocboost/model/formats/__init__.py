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

from ...cache.edges_text import feature_edges
from ...common import category_index
from ...errors import ModelError, ParameterError
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
    """What :class:`~oocboost.model.model.Model` has for other formats: :meth:`export`,
    :meth:`export_input`, and for models that came from one without bin edges
    (imported), :meth:`split_points` and :meth:`on_bin_edges`."""

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
        from ..raw_input import raw_matrices

        blocks = list(raw_matrices(self, X, read_options))
        out = np.concatenate(blocks) if blocks else np.empty((0, self.n_features))
        max_bin = self.max_bin
        for f, kind in enumerate(self.feature_types):
            if kind != "numeric" and max_bin is not None:
                codes = out[:, f]
                known = ~np.isnan(codes)
                codes[known] = category_index(codes[known].astype(np.int64), max_bin)
        return out

    def split_points(self) -> dict[str, np.ndarray]:
        """Each numeric feature's split thresholds (sorted, unique), by feature name: what
        ``build_cache(..., split_points=model)`` puts among a cache's bin edges."""
        by_feature: dict[int, list] = {}
        for tree in self.trees:
            numeric = (tree.left >= 0) & ~tree.is_categorical
            for f in np.unique(tree.feature[numeric]):
                by_feature.setdefault(int(f), []).append(
                    tree.threshold[numeric & (tree.feature == f)])
        return {self.feature_names[f]: np.unique(np.concatenate(parts))
                for f, parts in sorted(by_feature.items())}

    def on_bin_edges(self, bin_mapper: dict):
        """This model on a cache's bin edges (``bin_mapper``: the cache's manifest dict):
        a copy whose trees' bin thresholds are the edges its thresholds sit on, so it
        predicts from codes as from raw values. ModelError naming a threshold that is no
        edge (build the cache with ``split_points=model``) or features that differ."""
        import copy

        from ..fields import read_typed
        from .common import on_edges

        where = "the cache's bin edges"
        features = read_typed(bin_mapper, "features", (list,), where)
        names = [f.get("name") if isinstance(f, dict) else None for f in features]
        if names != list(self.feature_names):
            raise ModelError(f"the model's features {self.feature_names[:5]} are not the "
                             f"cache's {names[:5]} (in order)")
        if any(kind != "numeric" for kind in self.feature_types):
            raise ModelError("a model without bin edges has numeric features only")
        edges = [feature_edges(f, f"{where}, feature {f.get('name')!r}") for f in features]
        model = copy.copy(self)
        model.trees = [on_edges(tree, edges, self.feature_names, t)
                       for t, tree in enumerate(self.trees)]
        model.bin_mapper = bin_mapper
        model.attributes = dict(self.attributes)
        model.invalidate_cache()
        model.validate()
        return model
