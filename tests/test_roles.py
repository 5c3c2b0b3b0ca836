"""Head roles by probe (inspector.analyses.roles, issue 29): every score against an independent computation from an
eager model's own attention weights, heads forced into a role by weight edits, the shipped induction model's circuit,
seeds, and the bad options the CLI refuses in one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModel

from inspector.analyses import roles, roles_causal
from inspector.base.errors import InvalidRequestError
from inspector.charts.sentences.roles import roles_words, verdict
from inspector.cli import main
from inspector.core.forward import forward
from inspector.core.loading import load_model
from kernels.hf import SequenceHeadAblation, WeightEdit

REPEAT, BATCH = 8, 4


def _eager_scores(folder, ids: np.ndarray, repeat: int, window: int) -> dict[str, np.ndarray]:
    """Every probe score, per sequence (batch, L, H), by hand from an eager model's ``output_attentions``."""
    eager = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        out = eager(input_ids=torch.from_numpy(ids), attention_mask=torch.ones(ids.shape, dtype=torch.long),
                    output_attentions=True)
    attn = torch.stack(out.attentions, dim=1).double().numpy()  # (batch, L, H, n, n)
    n = ids.shape[1]
    causal = bool(np.allclose(np.triu(attn[0, 0, 0], 1), 0))
    model_window = getattr(eager.config, "sliding_window", None)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    w = min(window, model_window) if model_window else window
    band = ((i - j >= 0) & (i - j < w)) if causal else (np.abs(i - j) < w)
    visible = (j <= i) if causal else np.ones((n, n), dtype=bool)
    if model_window:
        visible = visible & (i - j < model_window)
    rows = np.arange(repeat + 1, 2 * repeat + 1)  # the second copy
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(attn > 0, attn * np.log(attn), 0.0).sum(-1)  # (batch, L, H, n)
        keys = visible.sum(-1)
        normalised = entropy[..., keys > 1] / np.log(keys[keys > 1])
    return {
        "previous": attn[..., np.arange(1, n), np.arange(n - 1)].mean(-1),
        "induction": attn[..., rows, rows - repeat + 1].mean(-1),
        "duplicate": attn[..., rows, rows - repeat].mean(-1),
        "sink": attn[..., :, 0].sum(-1) / visible[:, 0].sum(),  # Gu et al.: over the queries that see the first key
        "local": (attn * band).sum(-1).mean(-1),
        "broad": normalised.mean(-1),
    }


@pytest.mark.parametrize("arch", ["bert", "llama", "mistral"])
def test_every_score_equals_an_independent_computation_from_eager_weights(tiny_model_dirs, arch):
    """BERT (bidirectional), Llama (RoPE, grouped-query) and Mistral (sliding window 4 < the local window 6)."""
    folder = tiny_model_dirs[arch]
    loaded = load_model(str(folder))
    result = roles_causal.head_roles(loaded, repeat=REPEAT, batch=BATCH, window=6, causal=False)
    expected = _eager_scores(folder, result.probe.ids, REPEAT, window=6)
    for role in roles.ROLES:
        np.testing.assert_allclose(result.scores[role], expected[role].mean(0), atol=2e-5, err_msg=role)
        assert (result.low[role] <= result.scores[role] + 1e-6).all() and (result.scores[role] <= result.high[role]
                                                                          + 1e-6).all()
    assert result.windows.tolist() == ([4, 4] if arch == "mistral" else [6, 6])
    assert result.probe.ids.shape == (BATCH, 2 * REPEAT + 1)
    assert (result.probe.ids[:, 1:REPEAT + 1] == result.probe.ids[:, REPEAT + 1:]).all()
    # The interval is the Student-t one over the batch.
    from scipy import stats

    per_sequence = expected["broad"][:, 0, 0]
    low, high = stats.t.interval(0.95, BATCH - 1, loc=per_sequence.mean(), scale=stats.sem(per_sequence))
    assert result.low["broad"][0, 0] == pytest.approx(max(low, 0.0), abs=2e-5)
    assert result.high["broad"][0, 0] == pytest.approx(min(high, 1.0), abs=2e-5)


def _one_hot(rows_to_keys):
    def edit(weights: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        n = weights.shape[-1]
        uniform = visible.expand_as(weights).float()
        new = uniform / uniform.sum(-1, keepdim=True)
        for row, key in rows_to_keys(n):
            new[..., row, :] = 0.0
            new[..., row, key] = 1.0
        return new
    return edit


FORCED = {
    "previous": _one_hot(lambda n: [(i, max(i - 1, 0)) for i in range(n)]),
    "induction": _one_hot(lambda n: [(i, i - REPEAT + 1) for i in range(REPEAT + 1, n)]),
    "sink": _one_hot(lambda n: [(i, 0) for i in range(n)]),
}


@pytest.mark.parametrize("role", sorted(FORCED))
def test_a_head_forced_into_a_role_is_found_as_that_role_and_no_other(tiny_llama, role):
    forced = (1, 2)
    edit = WeightEdit(layer=forced[0], heads=(forced[1],), edit=FORCED[role])
    result = roles_causal.head_roles(tiny_llama, repeat=REPEAT, batch=BATCH, causal=False, interventions=(edit,))
    assert result.dominant[forced] == role
    assert result.top_heads(role, 1) == [forced]
    assert result.scores[role][forced] > 0.95
    others = [r for r in ("induction", "duplicate", "previous", "sink") if r != role]
    assert all(result.scores[r][forced] < roles.ROLE_THRESHOLDS[r] for r in others)
    # No other head takes the forced role (a random tiny model has none of these roles).
    assert (result.dominant == role).sum() == 1


def test_the_shipped_induction_model_its_circuit_found_and_proven(shipped_induction):
    loaded = shipped_induction
    result = roles_causal.head_roles(loaded, repeat=12, batch=6, top_k=4, seeds=3, causal=False)
    induction = result.scores["induction"]
    # The copy happens in the second layer (tests/test_groundtruth.py): all four of its heads, none of the first's.
    assert (induction[1] > 0.8).all() and (result.low["induction"][1] > 0.7).all() and (induction[0] < 0.4).all()
    assert (result.dominant[1] == "induction").all()
    assert result.top_heads("previous", 1) == [(0, 1)] and result.dominant[0, 1] == "previous"
    # Removing the induction layer breaks the repeat: the loss on the repeated half rises by nats.
    whole_layer = roles_causal.causal_test(loaded, result.probe, "induction", [(1, h) for h in range(4)], seeds=3)
    assert whole_layer.measure == "loss" and whole_layer.role_low > 1.0
    assert all(layer == 0 for heads in whole_layer.random_heads for layer, _ in heads)  # no other heads in layer 1
    # The circuit's previous-token head (its first half, which the induction heads read): causal for the repeat,
    # and as many random heads of its layer are not.
    circuit = roles_causal.causal_test(loaded, result.probe, "induction", [(0, 1)], seeds=3)
    assert circuit.causal and circuit.role_low > 1.0 and circuit.random_high < 0.5
    assert "is causal" in verdict(circuit) and "因果" in verdict(circuit, "zh")
    others = roles_causal.causal_test(loaded, result.probe, "induction", [(0, 0)], seeds=3)
    assert not others.causal


def _plain_rises(loaded, probe, role, heads) -> np.ndarray:
    """(batch,) the causal test's rise for ``heads`` by the plainest route: one forward from the first layer of the
    probe read up to its last measured position (what a causal model's predictions there see), the heads removed,
    the model's own logits, log-softmax and KL by torch — no resuming, no chunked head, no batched copies."""
    positions = roles_causal._measured_positions(role, probe.repeat, probe.length)
    ids = torch.from_numpy(probe.ids[:, :positions.max() + 1])
    mask = torch.ones(ids.shape[0], loaded.info.num_heads, dtype=torch.bool)
    edits = []
    for layer in sorted({layer for layer, _ in heads}):
        chosen = torch.zeros_like(mask)
        chosen[:, [head for at, head in heads if at == layer]] = True
        edits.append(WeightEdit(layer=layer, heads=tuple(range(loaded.info.num_heads)),
                                edit=roles_causal._first_token_removed(chosen)) if role == "sink"
                     else SequenceHeadAblation(layer=layer, mask=chosen, mode="mean"))
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    before = forward(loaded, inputs, stats=()).outputs.logits[:, positions].log_softmax(-1).double()
    after = forward(loaded, inputs, stats=(), interventions=edits).outputs.logits[:, positions].log_softmax(-1).double()
    if role == "sink":
        return (before.exp() * (before - after)).sum(-1).mean(-1).numpy()
    targets = torch.from_numpy(probe.ids[:, positions + 1])[..., None]
    return (before.gather(-1, targets) - after.gather(-1, targets))[..., 0].mean(-1).numpy()


@pytest.mark.parametrize("role", roles.CAUSAL_ROLES)
def test_every_rise_equals_a_plain_forward_of_what_the_measure_reads(shipped_induction, role, monkeypatch):
    monkeypatch.setattr(roles_causal, "_VOCAB_CHUNK", 8)  # the 53-token vocabulary in seven chunks, the last one short
    probe = roles.make_probe(shipped_induction, repeat=10, batch=4, seed=1)
    heads = [(1, 2), (0, 1)]
    test = roles_causal.causal_test(shipped_induction, probe, role, heads, seeds=2)
    assert test.measure == ("kl" if role == "sink" else "loss")
    assert test.role_rise == pytest.approx(_plain_rises(shipped_induction, probe, role, heads).mean(), abs=1e-4)
    for rise, random_heads in zip(test.random_rises, test.random_heads):
        assert rise == pytest.approx(_plain_rises(shipped_induction, probe, role, random_heads).mean(), abs=1e-4)


def test_the_chunked_head_is_the_models_head_or_not_used(shipped_induction, monkeypatch):
    probe = roles.make_probe(shipped_induction, repeat=6, batch=2, seed=0)
    forwarded = roles.probe_forward(shipped_induction, probe, for_causal=True)
    hidden, logits = forwarded.outputs.hidden_states[-1], forwarded.outputs.logits
    head = roles_causal._ChunkedHead.of(shipped_induction, hidden, logits)
    assert head is not None  # the shipped model's head is a plain linear layer
    monkeypatch.setattr(roles_causal, "_VOCAB_CHUNK", 10)
    # A head that scales: the model's own.
    assert roles_causal._ChunkedHead.of(shipped_induction, hidden, logits * 2) is None
    capped = roles_causal._ChunkedHead(weight=head.weight, bias=torch.ones(head.weight.shape[0]), softcap=3.0)
    expected = torch.tanh((hidden @ head.weight.T + 1) / 3.0) * 3.0
    torch.testing.assert_close(torch.cat([chunk for _, chunk in capped.chunks(hidden)], -1), expected)
    targets = torch.from_numpy(probe.ids)
    torch.testing.assert_close(capped.target_logits(hidden, targets), expected.gather(-1, targets[..., None])[..., 0])


@pytest.fixture(scope="module")
def shipped_induction():
    return load_model("shipped:induction", device="cpu")


def test_seeds_make_the_probe_reproducible(tiny_llama):
    first = roles_causal.head_roles(tiny_llama, repeat=REPEAT, batch=BATCH, seed=3, causal=False)
    again = roles_causal.head_roles(tiny_llama, repeat=REPEAT, batch=BATCH, seed=3, causal=False)
    other = roles_causal.head_roles(tiny_llama, repeat=REPEAT, batch=BATCH, seed=4, causal=False)
    assert np.array_equal(first.probe.ids, again.probe.ids) and not np.array_equal(first.probe.ids, other.probe.ids)
    for role in roles.ROLES:
        np.testing.assert_array_equal(first.scores[role], again.scores[role])
    rng = [np.random.default_rng(7) for _ in range(2)]
    assert (roles_causal.random_same_layer_heads([(0, 1), (1, 0)], 4, rng[0], 2)
            == roles_causal.random_same_layer_heads([(0, 1), (1, 0)], 4, rng[1], 2))


def test_the_causal_test_runs_batched_and_reports_json(tiny_llama):
    calls = []
    result = roles_causal.head_roles(tiny_llama, repeat=REPEAT, batch=BATCH, top_k=2, seeds=2,
                                     progress=lambda done, total, note: calls.append((done, total)))
    stages = 1 + len(roles.CAUSAL_ROLES)  # the probe, then each role's test: the progress contract's last call
    assert calls == [(done, stages) for done in range(1, stages + 1)]
    assert [test.role for test in result.tests] == list(roles.CAUSAL_ROLES)
    for test in result.tests:
        assert test.measure == "hidden" and len(test.heads) == 2 and test.random_rises.shape == (2,)
        for heads in test.random_heads:  # same layers where they have other heads, never the role's own
            assert not set(heads) & set(test.heads)
    payload = roles.roles_json(result, **roles_words(result, "zh"))
    assert payload["probe"]["repeat"] == REPEAT and len(payload["causal_tests"]) == 3
    assert len(payload["scores"]["induction"]["mean"]) == 2 and payload["report"][0].startswith("探针")
    # Issue 44 item 9: the role counts are joined with the Chinese enumeration comma, not "; ".
    counts = next(line for line in payload["report"] if "归纳" in line and "、" in line)
    assert ";" not in counts and ", " not in counts


@pytest.mark.parametrize("options, message", [
    (dict(repeat=1), "at least 2"),
    (dict(window=0), "1 to 1,048,576"),
    (dict(window=10**30), "1 to 1,048,576"),
    (dict(seeds=10**12), "2 to 100"),
    (dict(seed=-1), r"0 to 2\^63"),
    (dict(top_k=5), "at most 4"),
    (dict(batch=1), "2 to"),
    (dict(repeat=40), "reads at most 64"),
])
def test_bad_options_are_refused_in_one_line(tiny_llama, options, message):
    settings = {"repeat": REPEAT, "batch": BATCH, "causal": False, **options}
    with pytest.raises(InvalidRequestError, match=message):
        roles_causal.head_roles(tiny_llama, **settings)


@pytest.mark.parametrize("argv, message", [
    (["--repeat", "1"], "needs at least 2"),
    (["--window", "0"], "must be 1 to"),
    # Issue 45, item 7: a traceback, "pick a smaller --top-k" for 0, and a run that never ended.
    (["--window", str(10**30)], "must be 1 to 1,048,576"),
    (["--window", "1e30"], "--window"),
    (["--top-k", "0"], "use --top-k 1 or more"),
    (["--seeds", str(10**12)], "2 to 100"),
    (["--seed", "-1"], "0 to 2^63"),
])
def test_the_cli_refuses_bad_options_before_loading(capsys, argv, message):
    assert main(["heads", "--roles", "--model", "no/such-model", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err and err.startswith("error:")
    assert "smaller" not in err


def test_the_cli_prints_roles_and_writes_json(tmp_path, capsys):
    out = tmp_path / "roles.json"
    assert main(["heads", "--roles", "--model", "shipped:induction", "--repeat", "10", "--batch", "4",
                 "--top-k", "1", "--seeds", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Top induction heads" in printed and "Top previous-token heads" in printed and "L1H" in printed
    assert out.exists() and '"causal_tests"' in out.read_text()


@pytest.mark.slow
def test_a_bundled_decoder_has_causal_induction_heads(smollm2):
    result = roles_causal.head_roles(smollm2)  # the defaults: R = 20, batch 8, top-k 3, 4 seeds
    top = result.top_heads("induction", 1)[0]
    assert result.scores["induction"][top] > 0.5 and result.dominant[top] == "induction"
    assert result.test("induction").causal, verdict(result.test("induction"))


def test_census_roles_need_no_corpus_and_read_back(tmp_path, capsys):
    from inspector.analyses.census.roles import read_census_roles
    from inspector.analyses.census.store import CensusFolderError

    out = tmp_path / "induction-roles"
    assert main(["census", "--roles", "--model", "shipped:induction", "--out", str(out), "--repeat", "6",
                 "--top-k", "1"]) == 0
    assert "Top induction heads" in capsys.readouterr().out
    payload = read_census_roles(out)
    assert payload["shape"] == [2, 4] and payload["model"]["num_heads"] == 4
    assert np.array(payload["scores"]["induction"]["mean"])[1].min() > 0.5
    (out / "roles.json").write_text('{"shape": [2, 4]}')
    with pytest.raises(CensusFolderError, match="not a head-roles file"):
        read_census_roles(out)
    assert main(["census", "--model", "shipped:induction", "--out", str(tmp_path / "x")]) == 2
    assert "--roles" in capsys.readouterr().err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_roles_charts_draw_and_export_with_provenance(tiny_llama, lang):
    from inspector.charts.roles import causal_chart, probe_heatmap_chart, roles_map_chart, roles_table
    from inspector.output.export import Provenance, chart_svg, with_provenance

    result = roles_causal.head_roles(tiny_llama, repeat=REPEAT, batch=BATCH, top_k=1, seeds=2)
    roles_map = roles_map_chart(result, selected=(1, 2), lang=lang)
    assert len(roles_table(result, lang)) == 8 and set(roles_table(result, lang)["role_key"]) <= {*roles.ROLES, "none"}
    svg = chart_svg(with_provenance(roles_map, Provenance(model=tiny_llama.info.name, text="probe", backend="torch"),
                                    lang))
    assert tiny_llama.info.name in svg and ("dominant role" if lang == "en" else "主要角色") in svg
    causal = causal_chart(result, lang=lang).to_dict()
    assert len(causal["layer"]) == 3
    heatmap = probe_heatmap_chart(result, 1, 2, lang=lang)
    assert f"{1 - REPEAT}" in str(heatmap.to_dict()["title"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_causal_verdict_states_its_criterion_at_the_boundary(lang):
    """Issue 44 item 4: a role is causal when its 95 % interval lies above 0 and above the random heads'; the verdict
    says so, and flips just above and just below the random heads' upper bound."""
    from inspector.analyses.roles import CausalTest

    def test(role_low: float) -> CausalTest:
        return CausalTest(role="induction", heads=((1, 0),), measure="loss", baseline=0.0, role_rise=0.5,
                          role_low=role_low, role_high=0.9, random_heads=(((0, 1),), ((0, 2),)),
                          random_rises=np.array([0.1, 0.2]), random_mean=0.15, random_low=0.0, random_high=0.3,
                          causal=role_low > 0.3)

    above, at = verdict(test(0.3 + 1e-6), lang), verdict(test(0.3), lang)
    assert ("is causal" in above) if lang == "en" else ("是因果性的" in above and "未能" not in above)
    assert ("not shown causal" in at) if lang == "en" else ("未能证明" in at)
    criterion = {"en": "above 0 and above theirs", "zh": "高于 0，也高于随机头的区间"}[lang]
    assert criterion in above and criterion in at
