"""Head roles by probe (issue 29): the roles block of the Heads page (views/heads_roles.py), its report and charts."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # Role names (inspector.charts.sentences.roles.role_name) ----------------------------------------------------------
    ("roles.role.induction", "induction", "归纳"),
    ("roles.role.duplicate", "duplicate-token", "重复词元"),
    ("roles.role.previous", "previous-token", "前一词元"),
    ("roles.role.sink", "sink", "汇点"),
    ("roles.role.local", "local", "局部"),
    ("roles.role.broad", "broad", "宽泛"),
    ("roles.role.none", "none", "无"),
    # What each causal test measures (inspector.charts.sentences.roles.verdict) ----------------------------------------
    ("roles.measure.induction_loss", "the loss on the repeated half (nats)", "重复的后半段上的损失（奈特）"),
    ("roles.measure.previous_loss", "the loss on the first half (nats)", "前半段上的损失（奈特）"),
    ("roles.measure.sink_kl",
     "the first half's next-token distribution (KL(p ‖ p′) from the unablated one, nats; the heads lose only the "
     "first token's weight)",
     "前半段的下一个词元分布（相对未消融分布的 KL(p ‖ p′)，奈特；这些头只去掉第一个词元的权重）"),
    ("roles.measure.induction_hidden", "the repeated half's final hidden states (cosine distance from the unablated "
     "ones)", "重复的后半段的最终隐藏状态（与未消融时的余弦距离）"),
    ("roles.measure.previous_hidden", "the first half's final hidden states (cosine distance from the unablated ones)",
     "前半段的最终隐藏状态（与未消融时的余弦距离）"),
    ("roles.measure.sink_hidden",
     "the first half's final hidden states (cosine distance from the unablated ones; the heads lose only the first "
     "token's weight)",
     "前半段的最终隐藏状态（与未消融时的余弦距离；这些头只去掉第一个词元的权重）"),
    # The verdict and the report (inspector.charts.sentences.roles) ----------------------------------------------------
    ("roles.verdict.causal",
     "The {role} role is causal on this model: removing its top heads ({heads}) changes {measure} by {rise} (95 % "
     "interval {low} to {high}), more than as many random heads of the same layers ({random}, {rlow} to {rhigh} over "
     "{seeds} seeds): its interval lies above 0 and above theirs.",
     "{role}角色在此模型上是因果性的：移除其得分最高的头（{heads}）使{measure}变化 {rise}（95% 区间 {low} 至 {high}），"
     "大于移除同层同样数量的随机头（{random}，{seeds} 个种子上为 {rlow} 至 {rhigh}）：其区间高于 0，也高于随机头"
     "的区间。"),
    ("roles.verdict.not_causal",
     "The {role} role is not shown causal on this model: removing its top heads ({heads}) changes {measure} by "
     "{rise} (95 % interval {low} to {high}), not clearly more than as many random heads of the same layers "
     "({random}, {rlow} to {rhigh} over {seeds} seeds): it would need its interval above 0 and above theirs.",
     "未能证明{role}角色在此模型上是因果性的：移除其得分最高的头（{heads}）使{measure}变化 {rise}（95% 区间 {low} 至 "
     "{high}），并不明显大于移除同层同样数量的随机头（{random}，{seeds} 个种子上为 {rlow} 至 {rhigh}）：这需要其区间"
     "高于 0，也高于随机头的区间。"),
    ("roles.report.probe",
     "Probe: {batch} sequences of BOS + {repeat} random token ids (from ids {low}–{high}, no special tokens) + the "
     "same ids again, seed {seed}; local window {window} tokens.",
     "探针：{batch} 条序列，每条为 BOS + {repeat} 个随机词元 id（取自 id {low}–{high}，不含特殊词元）"
     "+ 同样的 id 再来一遍，种子 {seed}；局部窗口 {window} 个词元。"),
    ("roles.report.top", "Top {role} heads (score, 95 % interval): {heads}.",
     "得分最高的{role}头（得分，95% 区间）：{heads}。"),
    ("roles.report.counts", "Heads by dominant role: {counts}.", "按主要角色统计的头数：{counts}。"),
    # The roles block of the Heads page (views/heads_roles.py) -------------------------------------------------------
    ("roles.page.title", "Head roles by probe", "用探针识别注意力头的角色"),
    ("roles.page.caption",
     "Every head reads the same fixed probe — BOS, R random tokens, the same R tokens again (Olsson et al. 2022) — "
     "so induction, previous-token, duplicate-token, sink, local and broad heads show on any model, whatever the "
     "sidebar's text. Then each role's top heads are removed and compared with as many random heads of the same "
     "layers: a pattern seen is not yet a pattern used. k: heads removed per role; w: the local window in tokens.",
     "每个头都读同一个固定探针——BOS、R 个随机词元、再把这 R 个词元重复一遍（Olsson 等，2022）——"
     "因此无论侧边栏的文本是什么，任何模型上的归纳、前一词元、重复词元、汇点、局部和宽泛头都会显现。"
     "然后移除每个角色得分最高的头，并与移除同层同样数量的随机头"
     "比较：看到一种模式，并不等于模型用到了它。k：每个角色移除的头数；w：局部窗口的词元数。"),
    ("roles.page.run", "Find head roles", "识别注意力头的角色"),
    ("roles.page.run_help", "Runs the probe and the causal test (seconds on a small model, longer on a CPU).",
     "运行探针和因果检验（小模型上只需几秒，CPU 上会更久）。"),
    ("roles.page.repeat", "Tokens R", "词元数 R"),
    ("roles.page.batch", "Sequences", "序列数"),
    ("roles.page.top_k", "Heads k", "头数 k"),
    ("roles.page.window", "Window w", "窗口 w"),
    ("roles.page.seed", "Seed", "随机种子"),
    ("roles.page.running", "Probing {heads} heads with {batch} × {length} tokens…",
     "正在用 {batch} × {length} 个词元探测 {heads} 个头…"),
    ("roles.page.done", "Head roles in {seconds} s.", "识别头的角色用时 {seconds} 秒。"),
    ("roles.page.top_table", "Top heads per role", "每个角色得分最高的头"),
    ("roles.page.column_role", "role", "角色"),
    ("roles.page.column_rank", "rank", "名次"),
    ("roles.page.column_head", "head", "头"),
    ("roles.page.column_score", "score", "得分"),
    ("roles.page.column_interval", "95 % interval", "95% 区间"),
    ("roles.page.causal", "Does the role matter? The causal test", "这个角色重要吗？因果检验"),
    ("roles.page.pick", "Click a head in the map to see its attention on a probe sequence.",
     "点击图中的一个头，查看它在一条探针序列上的注意力。"),
    ("roles.page.download_json", "Roles (JSON)", "角色（JSON）"),
    ("roles.page.probe_text", "probe: {batch} × (BOS + {repeat} random ids × 2), seed {seed}",
     "探针：{batch} ×（BOS + {repeat} 个随机 id × 2），种子 {seed}"),
    # The Compare page's two-model mode (views/compare_roles.py) ------------------------------------------------------
    ("roles.compare.title", "Head roles of the two models, side by side", "两个模型的头角色并排对比"),
    ("roles.compare.caption",
     "Each model's heads probed with the same recipe (BOS + R random tokens + the same tokens again) and their "
     "causal test, as on the Heads page: roles need no head-to-head partner, so models of different shapes compare "
     "too.",
     "用同样的探针（BOS + R 个随机词元 + 同样的词元再来一遍）探测每个模型的头并做因果检验，与“注意力头”页相同："
     "角色无需逐头配对，因此不同形状的模型也能对比。"),
    ("roles.compare.run", "Find both models' head roles", "识别两个模型的头角色"),
    ("roles.compare.model", "Model {side}: {model}", "模型 {side}：{model}"),
    # Charts (inspector.charts.roles) --------------------------------------------------------------------------------
    ("chart.roles.dominant", "dominant role", "主要角色"),
    ("chart.roles.sink_rate", "sink rate (share of sequences > ε)", "汇点率（超过 ε 的序列比例）"),
    ("chart.roles.map_title", "Head roles: each head's dominant role on the probe",
     "头的角色：每个头在探针上的主要角色"),
    ("chart.roles.map_note", "First role reaching its threshold: {thresholds}.",
     "取第一个达到阈值的角色：{thresholds}。"),
    # On screen only (inspector.output.export.SCREEN_ONLY_KEYS): a slide has no mouse.
    ("chart.roles.map_hover", "Hover for every score; click a head.", "把鼠标移到格子上可看全部得分；点击一个头。"),
    ("chart.roles.role_heads", "role's top heads", "该角色得分最高的头"),
    ("chart.roles.random_heads", "random heads, same layers", "同层随机头"),
    ("chart.roles.causal", "causal", "有因果作用"),
    ("chart.roles.not_causal", "not shown causal", "未证明有因果作用"),
    ("chart.roles.role", "role", "角色"),
    ("chart.roles.rise", "rise", "上升"),
    ("chart.roles.heads", "heads removed", "移除的头"),
    ("chart.roles.verdict", "verdict", "结论"),
    ("chart.roles.y_loss", "rise when removed (nats)", "移除后的上升（奈特）"),
    ("chart.roles.y_hidden", "rise when removed (cosine distance)", "移除后的上升（余弦距离）"),
    ("chart.roles.causal_title", "Removing a role's heads vs as many random heads",
     "移除某角色的头 vs 移除同样数量的随机头"),
    ("chart.roles.causal_note",
     "Induction: loss on the repeated half. Previous-token: loss on the first half. Sink: KL on the first half "
     "when the first token's weight is removed. Bars: 95 % intervals (role: over probe sequences; random: over "
     "{seeds} seeds).",
     "归纳：重复后半段上的损失。前一词元：前半段上的损失。汇点：移除第一个词元的权重后前半段上的 KL。"
     "竖线：95% 区间（角色：跨探针序列；随机：跨 {seeds} 个种子）。"),
    ("chart.roles.query", "query position", "查询位置"),
    ("chart.roles.key", "key position", "键位置"),
    ("chart.roles.weight", "attention weight", "注意力权重"),
    ("chart.roles.heatmap_title", "Layer {layer}, head {head} ({role}) on a probe sequence",
     "第 {layer} 层第 {head} 个头（{role}）在一条探针序列上"),
    ("chart.roles.heatmap_note",
     "Positions 1–{repeat} and their repeat: an induction head draws a stripe at offset {offset}.",
     "位置 1–{repeat} 及其重复：归纳头在偏移 {offset} 处画出一条斜线。"),
)
