"""Head roles by probe (issue 29): the roles block of the Heads page (views/heads_roles.py), its report and charts."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # Role names (inspector.analyses.roles.role_name) ------------------------------------------------------------------
    ("roles.role.induction", "induction", "归纳"),
    ("roles.role.duplicate", "duplicate-token", "重复词元"),
    ("roles.role.previous", "previous-token", "前一词元"),
    ("roles.role.sink", "sink", "汇点"),
    ("roles.role.local", "local", "局部"),
    ("roles.role.broad", "broad", "宽泛"),
    ("roles.role.none", "none", "无"),
    # What each causal test measures (inspector.analyses.roles.verdict) ------------------------------------------------
    ("roles.measure.induction_loss", "the loss on the repeated half (nats)", "重复的后半段上的损失（奈特）"),
    ("roles.measure.previous_loss", "the loss on the first half (nats)", "前半段上的损失（奈特）"),
    ("roles.measure.sink_kl", "the output change, KL(p ‖ p′) in nats, when the first token's weight is removed",
     "移除第一个词元的权重后输出的变化，KL(p ‖ p′)（奈特）"),
    ("roles.measure.induction_hidden", "the cosine distance of the repeated half's final hidden states",
     "重复的后半段最终隐藏状态的余弦距离"),
    ("roles.measure.previous_hidden", "the cosine distance of the first half's final hidden states",
     "前半段最终隐藏状态的余弦距离"),
    ("roles.measure.sink_hidden",
     "the cosine distance of the final hidden states when the first token's weight is removed",
     "移除第一个词元的权重后最终隐藏状态的余弦距离"),
    # The verdict and the report (inspector.analyses.roles) ------------------------------------------------------------
    ("roles.verdict.causal",
     "The {role} role is causal on this model: removing its top heads ({heads}) changes {measure} by {rise} (95 % "
     "interval {low} to {high}), more than as many random heads of the same layers ({random}, {rlow} to {rhigh} over "
     "{seeds} seeds).",
     "{role}角色在此模型上是因果性的：移除其得分最高的头（{heads}）使{measure}变化 {rise}（95% 区间 {low} 至 {high}），"
     "大于移除同层同样数量的随机头（{random}，{seeds} 个种子上为 {rlow} 至 {rhigh}）。"),
    ("roles.verdict.not_causal",
     "The {role} role is not shown causal on this model: removing its top heads ({heads}) changes {measure} by "
     "{rise} (95 % interval {low} to {high}), not clearly more than as many random heads of the same layers "
     "({random}, {rlow} to {rhigh} over {seeds} seeds).",
     "未能证明{role}角色在此模型上是因果性的：移除其得分最高的头（{heads}）使{measure}变化 {rise}（95% 区间 {low} 至 "
     "{high}），并不明显大于移除同层同样数量的随机头（{random}，{seeds} 个种子上为 {rlow} 至 {rhigh}）。"),
    ("roles.report.probe",
     "Probe: {batch} sequences of BOS + {repeat} random token ids (from ids {low}–{high}, no special tokens) + the "
     "same ids again, seed {seed}; local window {window} tokens.",
     "探针：{batch} 条序列，每条为 BOS + {repeat} 个随机词元 id（取自 id {low}–{high}，不含特殊词元）"
     "+ 同样的 id 再来一遍，种子 {seed}；局部窗口 {window} 个词元。"),
    ("roles.report.top", "Top {role} heads (score, 95 % interval): {heads}.",
     "得分最高的{role}头（得分，95% 区间）：{heads}。"),
    ("roles.report.counts", "Heads by dominant role: {counts}.", "按主要角色统计的头数：{counts}。"),
)
