"""The sampler registry, the interfaces (swcuts.models.protocols) and the state's workspaces."""

import numpy as np
import pytest

import swcuts
from swcuts.segmentation import image_models, options
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image import ImageModel
from swcuts.models.mixture.model import MixtureModel
from swcuts.models.protocols import CompiledKernel, Kernel, Model, is_compiled
from swcuts.samplers import KERNELS
from swcuts.samplers.registry import REGISTRY, sampler_spec
from swcuts.samplers.compiled import CompiledWorkspace


def _image_model(boundary=0.0):
    rng = np.random.default_rng(0)
    img = rng.random((6, 7))
    img[:, 4:] += 1.0
    atoms = np.arange(42).reshape(6, 7)
    return ImageModel(img / 2, atoms, RegionGraph.from_labels(atoms), a0=1.0, a1=1.0,
                      boundary=boundary)


def test_every_name_has_one_record():
    names = [spec.name for spec in REGISTRY]
    assert len(names) == len(set(names))
    assert set(swcuts.SAMPLERS) == set(names) | {a for s in REGISTRY for a in s.aliases}
    assert set(KERNELS) == {s.name for s in REGISTRY if not s.hierarchical}


def test_tables_are_read_off_the_registry():
    for spec in REGISTRY:
        assert options.STEPS_PER_ATOM[spec.name] == spec.steps_per_atom
        assert options.DEFAULT_T0[spec.name] == spec.t0
        assert (spec.name in options.PIXEL_SAMPLERS) == (spec.default_atoms == "pixels")
        assert (spec.name in options.HIERARCHICAL) == spec.hierarchical
        assert (spec.name in options.ROW_SAMPLERS) == spec.needs_rows
        assert options.default_steps(spec.name, 1000) == spec.steps_per_atom * 1000
        name, t0 = options.check_options(sampler=spec.name)
        assert name == spec.name and t0 == (options.ATOMS_INIT_T0 if spec.starts_from_atoms else spec.t0)


def test_mixture_samplers_are_those_without_a_graph():
    from swcuts.clustering import MIXTURE_SAMPLERS as mixture_samplers

    assert mixture_samplers == tuple(s.name for s in REGISTRY if not s.needs_graph)
    assert set(mixture_samplers) == {"gibbs", "split-merge", "random-split", "triadic",
                                     "reconfiguration", "srm", "tree-guided"}


def test_resolve_options_fills_the_records_defaults():
    opts = options.resolve_options(sampler="multigrid")
    assert opts.spec is sampler_spec("multigrid")
    assert (opts.atoms, opts.init, opts.posterior) == ("pixels", "atoms", "contrast")
    colour = np.random.default_rng(0).random((100, 200, 3))
    opts = options.resolve_options(sampler="split-merge", window_sizes=None).on_image(colour)
    default = image_models.DEFAULT_MODEL
    assert (opts.atoms, opts.init, opts.posterior) == ("watershed", "uniform", default)
    assert opts.n_atoms == options.default_n_atoms(100 * 200)
    assert opts.posterior_params()["a0"] == pytest.approx(image_models.MODELS[default]["a0"] * 0.2)
    assert opts.posterior_params()["a2"] == image_models.MODELS[default]["a2"]
    assert opts.window == options.model_window(default, 100, 200) > 0
    # One varying channel (grey, or colour without chroma): the weights times ONE_CHANNEL_WEIGHT.
    grey = colour.copy()
    grey[..., 1:] = 0.5
    params = options.resolve_options(sampler="swc", model="contrast").on_image(grey).posterior_params()
    w = image_models.ONE_CHANNEL_WEIGHT
    assert params["a0"] == pytest.approx(image_models.MODELS["contrast"]["a0"] * 0.2 * w)
    assert params["a2"] == pytest.approx(image_models.MODELS["contrast"]["a2"] * w)
    assert params["boundary"] == pytest.approx(image_models.MODELS["contrast"]["boundary"] * np.sqrt(0.2) * w)
    # Weights given are used as they are.
    assert options.resolve_options(sampler="swc", a2=1.5).on_image(grey).posterior_params()["a2"] == 1.5
    with pytest.raises(ValueError, match="window_sizes is an option of the multigrid and multilevel"):
        options.resolve_options(sampler="swc", window_sizes=[8])


def test_kernels_and_models_meet_the_protocols():
    model = _image_model()
    assert isinstance(model, Model)
    q = np.full(model.graph.n_edges, 0.5)
    for name, cls in KERNELS.items():
        kernel = cls(model, q)
        assert isinstance(kernel, Kernel), name
        if is_compiled(kernel):
            assert isinstance(kernel, CompiledKernel), name
    mix = MixtureModel(np.random.default_rng(0).normal(size=(10, 2)), likelihood="gaussian")
    assert isinstance(mix, Model)


def test_is_compiled_needs_both_run_and_the_flag():
    model = _image_model()
    q = np.full(model.graph.n_edges, 0.5)
    assert is_compiled(KERNELS["swc"](model, q))
    assert not is_compiled(KERNELS["swc"](model, q, compiled=False))
    assert not is_compiled(KERNELS["tree-guided"](model, q))

    class FlagOnly:  # a protocol check alone would not tell these apart
        compiled = True

    class RunOnly:
        compiled = False

        def run(self, *args):
            raise AssertionError("not to be called")

    assert not is_compiled(FlagOnly()) and not is_compiled(RunOnly())
    assert isinstance(KERNELS["swc"](model, q, compiled=False), CompiledKernel)


def test_state_workspace_is_made_once_per_kind_and_size():
    model = _image_model()
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    ws = state.workspace(CompiledWorkspace, model.n_vertices, model.n_vertices, model.n_stats)
    assert state.workspace(CompiledWorkspace, model.n_vertices, model.n_vertices, model.n_stats) is ws
    assert state.workspace(CompiledWorkspace, model.n_vertices, model.n_vertices + 1,
                           model.n_stats) is not ws
    # Kernels leave no attributes of their own on the state.
    before = set(vars(state))
    rng = np.random.default_rng(1)
    for name in ("swc", "multiflip", "multigrid", "gibbs"):
        kernel = KERNELS[name](model, np.full(model.graph.n_edges, 0.5))
        for _ in range(5):
            kernel.step(state, rng, 1.0)
    assert set(vars(state)) == before


def test_steps_for_converts_reference_steps_by_the_budgets():
    from swcuts.samplers.registry import REFERENCE_SAMPLER, steps_for

    ref = sampler_spec(REFERENCE_SAMPLER).steps_per_atom
    assert steps_for(REFERENCE_SAMPLER, 45, 100) == 4500
    for spec in REGISTRY:
        assert steps_for(spec.name, 45, 100) == max(1, round(4500 * spec.steps_per_atom / ref))
        for alias in spec.aliases:
            assert steps_for(alias, 45, 100) == steps_for(spec.name, 45, 100)
    assert steps_for("srm", 45, 100) < steps_for("gibbs", 45, 100)  # a sweep against one atom
    assert steps_for("srm", 1, 1) == 1  # never no step
    assert steps_for(lambda model, q: None, 6, 7) == 42  # a factory: at par
