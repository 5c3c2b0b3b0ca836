"""The Heads page (views/heads.py), its health report and its charts."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # The page (views/heads.py) ----------------------------------------------------------------------------------------
    ("heads.title", "Heads", "注意力头"),
    ("heads.caption",
     "Which heads are healthy, which attend to sinks, which are redundant, and which matter — every statistic is "
     "paired with what happens to the model's output when the head is removed.",
     "哪些头健康、哪些关注汇点、哪些冗余、哪些重要——每个统计量都配上移除该头时模型输出的变化。"),
    ("heads.progress_start", "Measuring {n} {n|text|texts}…", "正在测量 {n} 段文本…"),
    ("heads.corpus_progress", "{percent} done: {done} of {n} texts' worth measured, {rate} texts/s, about {eta} s left",
     "已完成 {percent}：已测量相当于 {n} 段文本中的 {done} 段，每秒 {rate} 段，约剩 {eta} 秒"),
    ("heads.mode_text", "This text", "当前文本"),
    ("heads.mode_corpus", "Corpus ({n} sentences)", "语料库（{n} 个句子）"),
    ("heads.mode_census", "Census folder", "普查文件夹"),
    ("heads.texts", "Texts", "文本"),
    ("heads.texts_help",
     "The sidebar's text, or the bundled corpus (assets/corpus) so a verdict is not drawn from one sentence. Corpus "
     "numbers are means over its texts.",
     "侧边栏中的文本，或自带的语料库（assets/corpus），这样结论不会只来自一个句子。语料库的数字是其中各文本的平均值。"),
    ("heads.ablation", "Remove a head by", "移除一个头的方式"),
    ("heads.mode.zero", "zero", "置零"),
    ("heads.mode.mean", "mean", "换成均值"),
    ("heads.ablation_help",
     "zero: its output is set to 0. mean: replaced by its mean over the text, keeping its constant offset and "
     "removing only what depends on the token.",
     "置零：把它的输出设为 0。换成均值：用它在整段文本上的均值代替，保留恒定偏移，只去掉随词元变化的部分。"),
    ("heads.thresholds", "Health thresholds", "健康阈值"),
    ("heads.collapsed_below", "Collapsed below", "低于此值为坍缩"),
    ("heads.collapsed_help", "Normalised entropy under this: nearly one-hot rows.",
     "归一化熵低于此值：各行几乎是独热的。"),
    ("heads.diffuse_above", "Diffuse above", "高于此值为弥散"),
    ("heads.diffuse_help", "Normalised entropy over this: nearly uniform rows.",
     "归一化熵高于此值：各行几乎是均匀的。"),
    ("error.health_thresholds", "Health thresholds need 0 ≤ collapsed < diffuse ≤ 1; got collapsed {collapsed}, "
     "diffuse {diffuse} — pick a collapsed threshold below the diffuse one.",
     "健康阈值需满足 0 ≤ 坍缩 < 弥散 ≤ 1；现在坍缩为 {collapsed}、弥散为 {diffuse}——请把坍缩阈值设得低于弥散阈值。"),
    ("error.sink_threshold", "The sink threshold must be in (0, 1] (a share of attention); got {sink}.",
     "汇点阈值必须大于 0 且不超过 1（注意力的一个份额）；现在是 {sink}。"),
    ("heads.sink_above", "Sink above", "高于此值为汇点"),
    ("heads.sink_help", "Gu et al. 2024: a key whose mean received weight exceeds this is a sink.",
     "Gu 等（2024）：平均收到的权重超过此值的键就是汇点。"),
    ("heads.corpus_size", "Sentences from the corpus", "取自语料库的句子数"),
    ("heads.corpus_size_help", "Fewer sentences run faster; the verdict rests on fewer examples.",
     "句子越少运行越快；但结论依据的例子也越少。"),
    ("heads.measuring", "Measuring {heads} {heads|head|heads} on {n} {n|text|texts}…", "正在 {n} 段文本上测量 "
     "{heads} 个头…"),
    ("heads.corpus_stopped", "Stopped after {done} of {n} texts. Nothing is shown for a stopped run.",
     "已在 {n} 段文本中的第 {done} 段后停止。停止的运行不显示结果。"),
    ("heads.corpus_run_again", "Run the corpus report again", "重新运行语料库报告"),
    ("heads.corpus_stop", "Stop the corpus report", "停止语料库报告"),
    ("heads.failed", "The head report could not be computed", "无法计算注意力头报告"),
    ("heads.corpus_done", "{model}: {n} {n|text|texts} in {seconds} s ({rate} texts/s), {backend} backend",
     "{model}：{n} 段文本，耗时 {seconds} 秒（每秒 {rate} 段），{backend} 后端"),
    ("heads.done", "{model}: {n} {n|text|texts}, {backend} backend, {seconds} s of measurement",
     "{model}：{n} 段文本，{backend} 后端，测量耗时 {seconds} 秒"),
    ("heads.glance", "Every head at a glance", "所有头一览"),
    ("heads.importance_pending", "Measuring what removing each head changes (the bar above); this part follows.",
     "正在测量移除每个头会改变什么（见上方进度条）；这一部分随后显示。"),
    ("heads.colour_by", "Colour by", "着色依据"),
    ("heads.grid.entropy", "Entropy", "熵"),
    ("heads.grid.sink", "Sink score", "汇点得分"),
    ("heads.grid.induction", "Induction", "归纳"),
    ("heads.grid.ablation", "Importance (ablation)", "重要性（消融）"),
    ("heads.grid.gradient", "Importance (gradient)", "重要性（梯度）"),
    ("heads.grid_caption",
     "Importance by ablation = {measure} when the head alone is removed ({mode}); by gradient = Michel et al.'s "
     "|∂L/∂gate| at gate 1, divided by its layer's ℓ2 norm. Induction = Olsson et al.'s score: a repeated token's "
     "attention on the token that followed its earlier occurrence (grey when the text repeats no token).",
     "按消融的重要性 = 只移除该头时的{measure}（{mode}）；按梯度的重要性 = Michel 等人的 |∂L/∂gate|（gate = 1 处），"
     "再除以所在层的 ℓ2 范数。归纳 = Olsson 等人的得分：重复出现的词元对它上次出现时紧随其后的词元的注意力（文本中没"
     "有重复词元时为灰色）。"),
    ("heads.more_lines", "The other {count} heads", "其余 {count} 个头"),
    ("heads.health", "Health report", "健康报告"),
    ("heads.where", "Where the attention goes (Clark et al. 2019) and what it moves (Kobayashi et al. 2020)",
     "注意力流向哪里（Clark 等，2019）以及它搬运了什么（Kobayashi 等，2020）"),
    ("heads.column.head", "head", "头"),
    ("heads.column.punctuation", "punctuation", "标点"),
    ("heads.column.self", "self", "自身"),
    ("heads.column.previous", "previous", "前一个"),
    ("heads.column.next", "next", "后一个"),
    ("heads.column.first_sink", "first-token sink score", "第一个词元的汇点得分"),
    ("heads.column.distance", "mean distance (tokens)", "平均距离（词元）"),
    ("heads.where_hidden", "Columns left out because they are 0 by construction on this model: {columns}.",
     "本模型上必然为 0 的列未列出：{columns}。"),
    ("heads.where_hidden_separator", "; ", "；"),
    ("heads.where_hidden_causal", "“→ next” (a causal mask hides every later token)",
     "“→ 后一个”（因果掩码遮住了后面的所有词元）"),
    ("heads.where_hidden_start", "those on a special token at the start of the text ([CLS], <s>, <bos>: the tokenizer "
     "put none there)", "文本开头特殊词元（[CLS]、<s>、<bos>）的列（分词器没有在开头加这类词元）"),
    ("heads.where_hidden_end", "those on the other special tokens ([SEP], </s>, <eos>, padding: the tokenizer added "
     "none to these texts)", "其他特殊词元（[SEP]、</s>、<eos>、填充）的列（分词器没有给这些文本加这类词元）"),
    ("heads.where_caption",
     "Shares of each head's attention budget, mean over queries; ‖αf(x)‖ columns: the same share of the "
     "norm-weighted attention, which is small when a sink receives weight but sends little value.",
     "每个头的注意力预算分配到各处的比例，对所有查询取平均；‖αf(x)‖ 列：按范数加权的注意力的同一比例——"
     "汇点收到权重却几乎不送出值时，这一比例很小。"),
    ("heads.redundancy", "Redundancy", "冗余"),
    ("heads.tab_js", "Attend alike (JS divergence)", "关注相似（JS 散度）"),
    ("heads.tab_cka", "Write alike (CKA)", "写入相似（CKA）"),
    ("heads.tab_mds", "Map (MDS)", "分布图（MDS）"),
    ("heads.pairs.pair", "pair", "头对"),
    ("heads.pairs.js", "JS divergence", "JS 散度"),
    ("heads.pairs.first", "ablate first", "消融第一个"),
    ("heads.pairs.second", "ablate second", "消融第二个"),
    ("heads.pairs.both", "ablate both", "两个都消融"),
    ("heads.pairs_caption", "The most attention-alike pairs, each ablated alone and together ({measure}).",
     "注意力最相似的几对头，分别单独消融和一起消融（{measure}）。"),
    ("heads.pruning", "Pruning", "剪枝"),
    ("heads.download_json", "Numbers (JSON)", "数值（JSON）"),
    # The health report's sentences (inspector.charts.sentences.heads.health_report) -----------------------------------
    ("heads.category.self", "the token itself", "词元自身"),
    ("heads.category.previous", "the previous token", "前一个词元"),
    ("heads.category.next", "the next token", "后一个词元"),
    ("heads.category.punctuation", "punctuation", "标点"),
    ("heads.report.head", "Layer {layer} head {head}", "第 {layer} 层第 {head} 个头"),
    ("heads.category.token", "{token}", "词元 {token}"),
    ("heads.report.looks", "{share} of its attention goes to {target}", "它 {share} 的注意力流向{target}"),
    ("heads.report.ablation", "ablating it ({mode}) changes the output by {change} ({measure}; rank {rank} of {total})",
     "消融它（{mode}）使输出变化 {change}（{measure}；在 {total} 个头中排第 {rank}）"),
    ("heads.report.no_repeats",
     "No token repeats in the text, so induction heads cannot show here: give a text that repeats a phrase (… A B "
     "… A) to find them.",
     "文本中没有重复出现的词元，所以这里看不出归纳头：给一段重复某个短语（… A B … A）的文本才能找到它们。"),
    ("heads.report.no_induction",
     "No induction head: no head puts more than {threshold} of a repeated token's attention on the token after its "
     "earlier occurrence (highest {highest}, {head}).",
     "没有归纳头：没有哪个头把重复词元超过 {threshold} 的注意力放在它上次出现之后的那个词元上（最高 {highest}，"
     "{head}）。"),
    ("heads.report.list_separator", ", ", "、"),
    ("heads.report.scored_head", "{head} ({score})", "{head}（{score}）"),
    ("heads.report.and_more_inline", ", and {n} more", "，另有 {n} 个"),
    ("heads.report.induction",
     "Induction heads (a repeated token attends to the token that followed its earlier occurrence — Olsson et al. "
     "2022; score > {threshold}): {named}{more}.",
     "归纳头（重复出现的词元关注它上次出现时紧随其后的词元——Olsson 等，2022；得分 > {threshold}）：{named}{more}。"),
    # Judged by inspector.charts.sentences.heads.pair_verdict: {factor} × the larger alone = {limit}, {additive} × the
    # two added = {total}.
    ("heads.report.pair_redundant",
     "redundant: removing both costs at most {factor} × the larger of the two ({limit})",
     "冗余：同时移除两者的代价不超过两者中较大者的 {factor} 倍（{limit}）"),
    ("heads.report.pair_partly_redundant",
     "partly redundant: removing both costs more than {factor} × the larger alone ({limit}) but less than "
     "{additive} × the two added ({total})",
     "部分冗余：同时移除两者的代价超过较大者的 {factor} 倍（{limit}），但低于两者之和的 {additive} 倍（{total}）"),
    ("heads.report.pair_not_redundant",
     "not redundant in effect: removing both costs at least {additive} × the two added ({total})",
     "实际效果上不冗余：同时移除两者的代价至少为两者之和的 {additive} 倍（{total}）"),
    ("heads.report.measured",
     "Measured on {texts} ({tokens} tokens) of {model}; numbers are means over the texts. Thresholds: collapsed = "
     "normalised entropy < {collapsed}, diffuse = normalised entropy > {diffuse}, sink = a key's sink score > {sink} "
     "(Gu et al. 2024).",
     "在 {model} 的 {texts}（共 {tokens} 个词元）上测量；数字是各文本的平均值。阈值：坍缩 = 归一化熵 < {collapsed}，"
     "弥散 = 归一化熵 > {diffuse}，汇点 = 某个键的汇点得分 > {sink}（Gu 等，2024）。"),
    ("heads.report.texts_one", "{n} text", "{n} 段文本"),
    ("heads.report.texts_many", "{n} texts", "{n} 段文本"),
    ("heads.report.and_more", "… and {n} more.", "……另有 {n} 个。"),
    ("heads.report.collapsed", "{head}: normalised entropy {entropy} < {threshold} (collapsed) — {looks}; {ablation}.",
     "{head}：归一化熵 {entropy} < {threshold}（坍缩）——{looks}；{ablation}。"),
    ("heads.report.no_collapsed", "No collapsed head: every normalised entropy is ≥ {threshold} (lowest {lowest}).",
     "没有坍缩的头：所有归一化熵都 ≥ {threshold}（最低 {lowest}）。"),
    ("heads.report.diffuse",
     "{head}: normalised entropy {entropy} > {threshold} (diffuse) — its attention is spread nearly evenly; "
     "{ablation}.",
     "{head}：归一化熵 {entropy} > {threshold}（弥散）——它的注意力几乎均匀分布；{ablation}。"),
    ("heads.report.no_diffuse", "No diffuse head: every normalised entropy is ≤ {threshold} (highest {highest}).",
     "没有弥散的头：所有归一化熵都 ≤ {threshold}（最高 {highest}）。"),
    ("heads.report.sinks",
     "{sinks} of {heads} heads {sinks|has|have} a sink key (largest sink score > {threshold}); {first} of "
     "them on the first "
     "token (highest first-token score {highest}, {head}).",
     "{heads} 个头中有 {sinks} 个有汇点键（最大汇点得分 > {threshold}）；其中 {first} 个落在第一个词元上（第一个词元"
     "的最高得分 {highest}，{head}）。"),
    ("heads.report.idle_sink",
     "{head}: {attention} of its attention goes to {specials} but only {value} of its norm-weighted attention ‖α "
     "f(x)‖ (Kobayashi et al. 2020) — heavy sink attention (over {share}) that moves little value (under half its "
     "attention share); {ablation}.",
     "{head}：它 {attention} 的注意力流向 {specials}，但按范数加权的注意力 ‖α f(x)‖ 只有 {value} 流向那里"
     "（Kobayashi 等，2020）——大量汇点注意力（超过 {share}）却几乎不搬运值（不到其注意力份额的一半）；{ablation}。"),
    ("heads.report.no_idle_sink",
     "No head sends more than {share} of its attention to {specials} while moving less than half as much of its "
     "value there.",
     "没有哪个头在把超过 {share} 的注意力送往 {specials} 的同时，搬运到那里的值还不到注意力的一半。"),
    ("heads.report.no_special_tokens",
     "The tokenizer added no special token to this text, so no head can park its attention on one; a sink, if "
     "any, is an ordinary token (see the sink line above).",
     "分词器没有给这段文本加任何特殊词元，所以没有头能把注意力停在特殊词元上；如果有汇点，它是普通词元（见上面关于汇点的一行）。"),
    ("heads.report.rankings_agree", "Spearman correlation of the two rankings over all heads: {rho}.",
     "两种排名在所有头上的 Spearman 相关系数：{rho}。"),
    ("heads.report.rankings_incomparable",
     "One of the two scores is the same for every head, so the rankings cannot be compared.",
     "两个得分之一在每个头上都相同，所以无法比较两种排名。"),
    ("heads.report.most_important",
     "Most important head by ablation: {ablation_head} ({measure} {ablation}); by Michel et al.'s gradient score: "
     "{gradient_head} (score {gradient}, layer-normalised). {agreement}",
     "按消融最重要的头：{ablation_head}（{measure} {ablation}）；按 Michel 等人的梯度得分：{gradient_head}（得分 "
     "{gradient}，按层归一化）。{agreement}"),
    ("heads.report.pair",
     "Attention-alike pair {a} & {b} (JS divergence {js} nats, of at most ln 2 = 0.693): ablating {a} changes the "
     "output by {first}, {b} by {second}, both by {both} — {verdict}.",
     "注意力相似的一对 {a} 和 {b}（JS 散度 {js} 奈特，最大为 ln 2 = 0.693）：消融 {a} 使输出变化 {first}，消融 {b} "
     "变化 {second}，两者都消融变化 {both}——{verdict}。"),
    ("heads.report.pruning",
     "Pruning by gradient importance: removing {removed} of {heads} heads ({share}) changes the output by {half}; "
     "removing all of them by {everything} ({measure}).",
     "按梯度重要性剪枝：移除 {heads} 个头中的 {removed} 个（{share}）使输出变化 {half}；全部移除时变化 "
     "{everything}（{measure}）。"),
    # Charts (inspector.charts.heads) ----------------------------------------------------------------------------------
    ("chart.heads.metric.entropy", "normalised entropy", "归一化熵"),
    ("chart.heads.metric.sink", "largest sink score", "最大汇点得分"),
    ("chart.heads.metric.induction", "induction score (Olsson et al.)", "归纳得分（Olsson 等）"),
    ("chart.heads.metric.ablation", "importance: output change when ablated", "重要性：消融后输出的变化"),
    ("chart.heads.metric.gradient", "importance: gradient score (Michel)", "重要性：梯度得分（Michel）"),
    ("chart.heads.flag.collapsed", "collapsed", "坍缩"),
    # Errors of the Heads page's own corpus (inspector.analyses.heads.read_corpus) ------------------------------------
    ("heads.error.corpus_unreadable", "The example corpus cannot be read on this server; use the text mode, and tell "
     "the operator.", "这台服务器读不了示例语料库；请使用单段文本模式，并告诉管理员。"),
    # The one-character marks drawn on collapsed and diffuse heads (the grids' subtitles say what they mean).
    ("chart.heads.mark.collapsed", "C", "坍"),
    ("chart.heads.flag.diffuse", "diffuse", "弥散"),
    ("chart.heads.mark.diffuse", "D", "弥"),
    ("chart.heads.no_induction", "none (no token repeats)", "无（没有重复的词元）"),
    ("chart.heads.ablation_change", "ablation change ({measure})", "消融带来的变化（{measure}）"),
    ("chart.heads.gradient_importance", "gradient importance (layer-normalised)", "梯度重要性（按层归一化）"),
    ("chart.heads.distance", "mean attention distance (tokens)", "平均注意力距离（词元）"),
    ("chart.heads.health_flag", "health flag", "健康标记"),
    ("chart.heads.grid_title", "Heads coloured by {legend}", "按“{legend}”着色的各头"),
    ("chart.heads.grid_note", "C = collapsed, D = diffuse. Grey = no value.", "坍 = 坍缩，弥 = 弥散。灰色 = 无数值。"),
    # On screen only (inspector.output.export.SCREEN_ONLY_KEYS): a slide cannot be clicked.
    ("chart.heads.grid_click", "Click a head to open it on the Inspect page.", "点击一个头即可在“查看”页打开它。"),
    ("chart.heads.clustered_note", "Heads in clustered order (average linkage): similar heads sit together.",
     "各头按聚类顺序排列（平均连接法）：相似的头排在一起。"),
    ("chart.heads.other_head", "other head", "另一个头"),
    ("chart.heads.mds_axis", "MDS axis {axis}", "多维缩放第 {axis} 轴"),
    ("chart.heads.mds_title", "Map of the heads (classical MDS of the JS divergence)",
     "各头的分布图（对 JS 散度做经典多维缩放）"),
    ("chart.heads.mds_note", "Close points attend alike (Clark et al. 2019, figure 6).",
     "靠得近的点关注方式相似（Clark 等，2019，图 6）。"),
    ("chart.heads.removed_axis", "share of heads removed (least important first)",
     "移除的头所占比例（从最不重要的开始）"),
    ("chart.heads.heads_removed", "heads removed", "已移除的头数"),
    ("chart.heads.fraction", "fraction", "比例"),
    ("chart.heads.pruning_title", "Pruning curve: how far the output moves as heads are removed",
     "剪枝曲线：随着头被移除，输出偏离多远"),
    ("chart.heads.pruning_note",
     "Order: Michel et al.'s gradient importance; removal: {mode} ablation. 0 = the unpruned output.",
     "顺序：Michel 等人的梯度重要性；移除方式：{mode}消融。0 = 未剪枝时的输出。"),
    ("chart.heads.js_title", "Jensen–Shannon divergence between heads", "各头之间的 Jensen–Shannon 散度"),
    ("chart.heads.js_legend", "JS divergence (nats)", "JS 散度（奈特）"),
    ("chart.heads.cka_title", "What heads write: linear CKA", "各头写入的内容：线性 CKA"),
    ("chart.heads.cka_legend", "CKA of residual contributions", "残差贡献的 CKA"),
    # An exported chart's provenance caption quotes its input text; a corpus run has many, so it names them.
    ("chart.heads.corpus_text", "corpus of {n} texts", "语料库中的 {n} 段文本"),
)
