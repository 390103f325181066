"""Tests of oocboost.learners.registry: every learner goes through one registration, and
a learner registered from outside the package (here, inside a test) trains from a cache
through the command line, saves, loads, predicts and shows in ``oocboost train --help``
without any other file changing."""
import contextlib
import io

import numpy as np
import pytest

import oocboost
from oocboost import cli
from oocboost.cache.build import build_cache
from oocboost.errors import ModelError, ParameterError
from oocboost.kernels import warmup
from oocboost.learners import registry
from oocboost.model.model import Model, load_model, source_attributes
from oocboost.model.parts import ModelPart
from oocboost.model.tree import Tree
from oocboost.utils.params import Param, ParamSpec

BUILT_IN = ["adaboost", "adaptive-random-forest", "gbtree", "decision-stream",
            "random-forest", "extra-trees", "decision-tree", "hoeffding-tree",
            "hoeffding-adaptive-tree", "online-bagging", "mars", "isolation-forest"]


def test_built_in_learners_are_registered_from_their_folders():
    specs = {spec.name: spec for spec in registry.specs()}
    assert sorted(specs) == sorted(BUILT_IN)
    assert registry.get("gbdt") is specs["gbtree"]  # LightGBM's name as an alias
    for spec in specs.values():
        assert callable(spec.train_function())
        assert spec.warmup_profile in (None, *warmup.PROFILES)
        for name, target in spec.estimators.items():
            assert registry.resolve(target).__name__ == name
            assert getattr(oocboost, name) is registry.resolve(target)
            assert name in oocboost.__all__


def test_unknown_learner_and_options_it_does_not_take_are_refused():
    with pytest.raises(ParameterError, match="unknown learner 'forest'; expected one of "
                                             "adaboost, gbtree"):
        registry.get("forest")
    request = registry.TrainRequest(learner="mars", params={}, cache="c.oocb",
                                    valid=("v.oocb",))
    with pytest.raises(ParameterError, match=r"--learner mars does not take --valid \(it "
                                             r"is for gbtree\)"):
        registry.train(request)
    with pytest.raises(ParameterError, match="does not take --init-model"):
        registry.train(registry.TrainRequest(learner="decision-tree", params={},
                                             cache="c.oocb", init_model="m.json"))


def test_names_are_unique_and_specs_checked():
    with pytest.raises(ParameterError, match="'gbdt' is taken by 'gbtree'"):
        registry.register(registry.LearnerSpec(name="other", summary="x", train=print,
                                               aliases=("gbdt",)))
    with pytest.raises(ParameterError, match="unknown options"):
        registry.LearnerSpec(name="x", summary="x", train=print, options=frozenset({"y"}))
    assert "other" not in registry.names()


class ToyOffset(ModelPart):
    """The toy learner's part: an offset added to the margin after the trees."""

    key = "toy_offset"

    def __init__(self, offset):
        self.offset = float(offset)

    def to_json(self):
        return {"offset": self.offset}

    @classmethod
    def from_json(cls, value, doc, where):
        if not isinstance(value, dict) or not isinstance(value.get("offset"), float):
            raise ModelError(f"{where}: toy_offset must be {{'offset': a number}}")
        return cls(value["offset"])

    def validate(self, model, fail):
        if not np.isfinite(self.offset):
            fail("toy_offset: the offset is not finite")

    def add_margin(self, model, X, out, t0, t1):
        out += self.offset

    def add_margin_binned(self, model, codes, missing_bin, out, t0, t1):
        out += self.offset

    def describe(self):
        return f"a mean and an offset of {self.offset}"


TOY_PARAMS = ParamSpec("toy-mean", [
    Param("shrink", "float", 1.0, "multiplies the mean", low=0.0, aliases=("eta",)),
    Param("offset", "float", 0.0, "added to every prediction"),
])


def _train_toy(request):
    """The toy learner: the weighted label mean, from one labels-only pass over the
    cache's blocks, as a one-leaf tree, plus an offset kept in its own model part."""
    from oocboost.learners.common.data import open_cache

    cache = open_cache(request.cache)
    total = weight = 0.0
    for block in cache.iter_blocks(prefetch=1, with_codes=False):
        w = np.ones(block.n_rows) if block.weight is None else block.weight
        total += float(np.dot(block.label.astype(np.float64), w))
        weight += float(w.sum())
    shrink = float(request.params.get("shrink", 1.0))
    leaf = Tree(left=[-1], right=[-1], feature=[-1], threshold=[0.0],
                value=[[shrink * total / weight]])
    mapper = cache.bin_mapper
    return Model([leaf], objective="reg:squarederror", learner="toy_mean",
                 feature_names=list(cache.feature_names),
                 feature_types=list(mapper.feature_types), bin_mapper=mapper.to_dict(),
                 params=dict(request.params), attributes=source_attributes(cache),
                 parts=[ToyOffset(request.params.get("offset", 0.0))])


@pytest.fixture
def toy_learner():
    spec = registry.register(registry.LearnerSpec(
        name="toy-mean", aliases=("toy",), summary="the label mean (a registry test)",
        train=_train_toy, model_learners=("toy_mean",), model_parts=(ToyOffset,),
        params=TOY_PARAMS))
    yield spec
    registry.unregister("toy-mean")


def _cli(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as exc:  # --help
            code = exc.code
    return code, out.getvalue()


def test_a_learner_registered_outside_the_package_runs_end_to_end(tmp_path, toy_learner):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    y = 2.0 + X[:, 0]
    cache = build_cache(X, tmp_path / "c.oocb", label=y, block_rows=1000, quiet=True)
    code, text = _cli("train", "--help")
    assert code == 0
    assert "toy-mean: the label mean (a registry test)" in " ".join(text.split())
    model_path = tmp_path / "m.json"
    code, text = _cli("train", cache.path, "-o", model_path, "--learner", "toy",
                      "--param", "eta=0.5", "--param", "offset=0.25", "--rounds", "1")
    assert code == 0 and f"saved {model_path}: a mean and an offset of 0.25" in text
    model = load_model(model_path)
    assert model.learner == "toy_mean" and model.part("toy_offset").offset == 0.25
    expected = 0.5 * float(np.mean(y.astype(np.float32).astype(np.float64))) + 0.25
    np.testing.assert_allclose(model.predict(X[:5]), expected, rtol=1e-12)
    np.testing.assert_allclose(model.predict_margin_binned(
        next(cache.iter_blocks(prefetch=0)).codes[:, :5], cache.max_bin - 1)[:, 0],
        expected, rtol=1e-12)
    # sliced and continued models keep a model-wide part
    assert model.slice_rounds(0, 1).part("toy_offset").offset == 0.25
    code, _ = _cli("train", cache.path, "-o", model_path, "--learner", "toy",
                   "--param", "shrink=-1", "--rounds", "1")
    assert code != 0   # the spec's range, checked before the learner runs
    code, _ = _cli("train", cache.path, "-o", model_path, "--learner", "toy",
                   "--param", "depth=3", "--rounds", "1")
    assert code != 0
    # A learner name that nothing registered is still refused on load.
    text = model_path.read_text().replace('"toy_mean"', '"other_mean"')
    model_path.write_text(text)
    with pytest.raises(ModelError, match="learner must be one of .*got 'other_mean'"):
        load_model(model_path)
    # A part whose learner is not registered in this process is an unknown field.
    model_path.write_text(text.replace('"other_mean"', '"toy_mean"'))
    registry.unregister("toy-mean")
    with pytest.raises(ModelError, match="unknown field 'toy_offset'"):
        load_model(model_path)
