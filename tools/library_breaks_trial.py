# ruff: noqa: E501 - the model configs read best one per line
"""A project of twenty tiny Hugging Face models (random weights from small configs, CPU, nothing
downloaded), each made in its own module and compiled by a helper one call deeper, as a user
would: the breaks inside transformers that `gbbot fix` is measured on (issues #41 and #50).

    python tools/library_breaks_trial.py [--shared] OUT_DIR [name,name,...]
    cd OUT_DIR && gbbot fix --json fix.json
    gbbot fix --apply && python /path/to/tools/library_breaks_compare.py   # no wrong fix: Inductor = eager

Each model has its helper (`hf/build_<name>.py`), or, with `--shared`, every model goes through one
(`hf/build.py`), as a project that builds many models often has it.

On transformers 5.24 and torch 2.13 (CPU), longformer, bigbird, led, switch, vits, reformer, xlm,
flaubert, nllbmoe, fastspeech2 and encodec have breaks; bart, mixtral, funnel and qwen2moe compile
in one graph. Found by probing 40 more models on transformers 5.25 (`torch._dynamo.explain` on each
tiny config): bigbird_pegasus, yoso, mra, ibert (in its quantised mode) and longt5 (local attention)
have breaks; 35 compile in one graph there.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

shared = "--shared" in sys.argv
arguments = [a for a in sys.argv[1:] if a != "--shared"]
repo = Path(arguments[0])
repo.mkdir(parents=True)
(repo / "hf").mkdir()
(repo / "hf/__init__.py").write_text("")
BUILD = textwrap.dedent('''\
    import torch


    def compiled(model):
        """Every model is compiled here."""
        model.eval()
        return torch.compile(model)
    ''')
T = "torch.randint(0, 100, (1, 16))"
MODELS = {
    "longformer": (
        "LongformerConfig",
        "LongformerModel",
        "vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, attention_window=8, max_position_embeddings=64",
        T,
    ),
    "bart": (
        "BartConfig",
        "BartModel",
        "vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64",
        T,
    ),
    "bigbird": (
        "BigBirdConfig",
        "BigBirdModel",
        "vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, attention_type='block_sparse', block_size=4, num_random_blocks=2, max_position_embeddings=128",
        T,
    ),
    "led": (
        "LEDConfig",
        "LEDModel",
        "vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, attention_window=8, max_encoder_position_embeddings=64, max_decoder_position_embeddings=64",
        T,
    ),
    "mixtral": (
        "MixtralConfig",
        "MixtralModel",
        "vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, num_local_experts=4, num_experts_per_tok=2",
        T,
    ),
    "funnel": (
        "FunnelConfig",
        "FunnelModel",
        "vocab_size=100, d_model=32, n_head=2, d_head=16, d_inner=64, block_sizes=[1, 1]",
        T,
    ),
    "switch": (
        "SwitchTransformersConfig",
        "SwitchTransformersEncoderModel",
        "vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_decoder_layers=1, num_heads=2, num_experts=4, num_sparse_encoder_layers=1",
        T,
    ),
    "qwen2moe": (
        "Qwen2MoeConfig",
        "Qwen2MoeModel",
        "vocab_size=100, hidden_size=32, intermediate_size=64, moe_intermediate_size=32, shared_expert_intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, num_experts=4, num_experts_per_tok=2",
        T,
    ),
    "vits": (
        "VitsConfig",
        "VitsModel",
        "vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, ffn_dim=64, flow_size=32, spectrogram_bins=33, upsample_initial_channel=32, upsample_rates=[4, 4], upsample_kernel_sizes=[8, 8], resblock_kernel_sizes=[3], resblock_dilation_sizes=[[1, 3]], duration_predictor_filter_channels=32, prior_encoder_num_flows=2, prior_encoder_num_wavenet_layers=2, posterior_encoder_num_wavenet_layers=2, duration_predictor_num_flows=2",
        "torch.randint(0, 40, (1, 16))",
    ),
    "reformer": (
        "ReformerConfig",
        "ReformerModel",
        "vocab_size=100, hidden_size=32, num_attention_heads=2, attention_head_size=16, feed_forward_size=64, axial_pos_shape=[4, 4], axial_pos_embds_dim=[16, 16], attn_layers=['local', 'lsh'], num_buckets=2, local_attn_chunk_length=4, lsh_attn_chunk_length=4, max_position_embeddings=16, is_decoder=False",
        T,
    ),
    "xlm": (
        "XLMConfig",
        "XLMModel",
        "vocab_size=100, emb_dim=32, n_layers=2, n_heads=2, max_position_embeddings=64",
        T,
    ),
    "flaubert": (
        "FlaubertConfig",
        "FlaubertModel",
        "vocab_size=100, emb_dim=32, n_layers=2, n_heads=2, max_position_embeddings=64",
        T,
    ),
    "nllbmoe": (
        "NllbMoeConfig",
        "NllbMoeModel",
        "vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_experts=4, expert_capacity=4, encoder_sparse_step=1, decoder_sparse_step=1, max_position_embeddings=64",
        f"{T}, decoder_input_ids=torch.randint(0, 100, (1, 8))",
    ),
    "fastspeech2": (
        "FastSpeech2ConformerConfig",
        "FastSpeech2ConformerModel",
        "vocab_size=40, hidden_size=32, encoder_layers=1, decoder_layers=1, encoder_linear_units=64, decoder_linear_units=64, encoder_num_attention_heads=2, decoder_num_attention_heads=2, num_mel_bins=8, duration_predictor_channels=32, pitch_predictor_channels=32, energy_predictor_channels=32, speech_decoder_postnet_units=32",
        "torch.randint(0, 40, (1, 16))",
    ),
    "encodec": (
        "EncodecConfig",
        "EncodecModel",
        "hidden_size=16, num_filters=4, num_residual_layers=1, upsampling_ratios=[2, 2], codebook_size=16, codebook_dim=16, target_bandwidths=[1.5], sampling_rate=800",
        "torch.randn(1, 1, 200)",
    ),
    "bigbird_pegasus": (
        "BigBirdPegasusConfig",
        "BigBirdPegasusModel",
        "vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, attention_type='block_sparse', block_size=4, num_random_blocks=2, max_position_embeddings=128",
        f"{T}, decoder_input_ids=torch.randint(0, 100, (1, 8))",
    ),
    "yoso": (
        "YosoConfig",
        "YosoModel",
        "vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64",
        T,
    ),
    "mra": (
        "MraConfig",
        "MraModel",
        "vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64, block_per_row=2, approx_mode='full'",
        T,
    ),
    "ibert": (
        "IBertConfig",
        "IBertModel",
        "vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64, quant_mode=True",
        T,
    ),
    "longt5": (
        "LongT5Config",
        "LongT5Model",
        "vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=2, encoder_attention_type='local', local_radius=4",
        f"{T}, decoder_input_ids=torch.randint(0, 100, (1, 8))",
    ),
}
if shared:
    (repo / "hf/build.py").write_text(BUILD)
for name, (config, model, args, inputs) in MODELS.items():
    helper = "hf.build" if shared else f"hf.build_{name}"
    if not shared:
        (repo / f"hf/build_{name}.py").write_text(BUILD)
    (repo / f"hf/{name}.py").write_text(
        textwrap.dedent(f"""\
        import torch
        from transformers import {config}, {model}

        from {helper} import compiled


        def run():
            torch.manual_seed(0)
            model = compiled({model}({config}({args})))
            with torch.no_grad():
                out = model({inputs})
            return out[0]
        """)
    )
names = arguments[1].split(",") if len(arguments) > 1 else list(MODELS)
entries = "".join(f"  - {{name: {n}, call: 'hf.{n}:run', timeout: 600}}\n" for n in names)
(repo / ".gbbot.yml").write_text(f"version: 1\nmode: fast\nentrypoints:\n{entries}")
g = ["git", "-c", "user.name=t", "-c", "user.email=t@e"]
subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
subprocess.run([*g, "commit", "-qm", "hf"], cwd=repo, check=True)
