"""A census folder on the Heads page (views/census_folder.py), the census report and its charts."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # The census folder view (views/census_folder.py) ------------------------------------------------------------------
    ("census.caption",
     "{texts} texts, {tokens} tokens, {errors} refused rows — model {model}, engine {engine}, code {code}.",
     "{texts} 条文本，{tokens} 个词元，{errors} 行被拒绝——模型 {model}，引擎 {engine}，代码 {code}。"),
    ("census.hosted",
     "Census folders can only be opened on a local instance: this hosted instance does not read paths on its server.",
     "只能在本地实例中打开普查文件夹：此托管实例不读取服务器上的路径。"),
    ("census.path", "Census folder on this machine", "本机上的普查文件夹"),
    ("census.path_help",
     "A folder written by `python -m inspector census --out FOLDER`; its numbers are shown without recomputing.",
     "由 `python -m inspector census --out FOLDER` 写出的文件夹；直接显示其中的数值，不重新计算。"),
    ("census.incomplete", "This census is not finished: {texts} texts so far. Rerun the same command to resume it.",
     "此普查尚未完成：目前 {texts} 条文本。重新运行同一命令即可继续。"),
    ("census.statistic", "Statistic", "统计量"),
    ("census.intervals", "Per-head means with 95% intervals", "各头的平均值及 95% 区间"),
    # The census report's sentences (inspector.charts.sentences.census) ------------------------------------------
    ("census.report_measured",
     "Census of {texts} texts ({tokens} tokens) of {model}; {errors} rows could not be measured (see errors.jsonl). "
     "Numbers are means over the texts with 95% intervals. Thresholds: collapsed = normalised entropy < {collapsed}, "
     "diffuse = normalised entropy > {diffuse}, sink = a key's sink score > {sink} (Gu et al. 2024).",
     "{model} 的普查：{texts} 条文本（{tokens} 个词元）；{errors} 行无法测量（见 errors.jsonl）。数值为各文本的平均"
     "值，附 95% 置信区间。阈值：塌缩 = 归一化熵 < {collapsed}，弥散 = 归一化熵 > {diffuse}，汇点 = "
     "某个键的汇点分数 > {sink}（Gu 等，2024）。"),
    ("census.report_no_collapsed", "No collapsed head: every normalised entropy is ≥ {threshold} (lowest {value}).",
     "没有塌缩的头：所有归一化熵都 ≥ {threshold}（最低 {value}）。"),
    ("census.report_no_diffuse", "No diffuse head: every normalised entropy is ≤ {threshold} (highest {value}).",
     "没有弥散的头：所有归一化熵都 ≤ {threshold}（最高 {value}）。"),
    ("census.report_collapsed",
     "Layer {layer} head {head}: normalised entropy {value} (95% interval {interval}) < {threshold} (collapsed).",
     "第 {layer} 层第 {head} 个头：归一化熵 {value}（95% 区间 {interval}）< {threshold}（塌缩）。"),
    ("census.report_diffuse",
     "Layer {layer} head {head}: normalised entropy {value} (95% interval {interval}) > {threshold} (diffuse) — its "
     "attention is spread nearly evenly.",
     "第 {layer} 层第 {head} 个头：归一化熵 {value}（95% 区间 {interval}）> {threshold}（弥散）——注意力几乎均匀分布。"),
    ("census.report_more", "… and {count} more.", "……另有 {count} 个。"),
    ("census.report_sinks",
     "{sinks} of {heads} heads {sinks|has|have} a sink key (mean largest sink score > {threshold}); {first} "
     "of them on the first "
     "token (highest first-token score {highest}, 95% interval {interval}, Layer {layer} head {head}).",
     "{heads} 个头中有 {sinks} 个存在汇点键（平均最大汇点分数 > {threshold}）；其中 {first} 个在第一个词元上（第一个"
     "词元的最高分数为 {highest}，95% 区间 {interval}，第 {layer} 层第 {head} 个头）。"),
    # Charts (inspector.charts.census) ---------------------------------------------------------------------------------
    # Census statistics by their names in inspector.analyses.batching.STATISTICS (English: the name with spaces).
    ("chart.census.stat.entropy", "entropy", "熵"),
    ("chart.census.stat.entropy_normalized", "entropy normalized", "归一化熵"),
    ("chart.census.stat.first_token_sink", "first token sink", "第一个词元的汇点得分"),
    ("chart.census.stat.max_sink_score", "max sink score", "最大汇点得分"),
    ("chart.census.stat.mass_cls", "mass cls", "[CLS] 的注意力比例"),
    ("chart.census.stat.mass_sep", "mass sep", "[SEP] 的注意力比例"),
    ("chart.census.stat.mass_on", "mass on {tokens}", "{tokens} 的注意力比例"),
    ("census.hidden", "Left out of the menu because they are 0 by construction on this model:{causal}{specials}",
     "本模型上必然为 0 的统计量未列入菜单：{causal}{specials}"),
    ("census.hidden_causal", " the mass on the next token (a causal mask hides every later token);",
     "后一个词元的注意力比例（因果掩码遮住了后面的所有词元）；"),
    ("census.hidden_specials", " a special-token mass (the tokenizer adds no such token to a text).",
     "特殊词元的注意力比例（分词器不会给文本加这类词元）。"),
    ("chart.census.stat.mass_punctuation", "mass punctuation", "标点的注意力比例"),
    ("chart.census.stat.mass_self", "mass self", "自身的注意力比例"),
    ("chart.census.stat.mass_previous", "mass previous", "前一个词元的注意力比例"),
    ("chart.census.stat.mass_next", "mass next", "后一个词元的注意力比例"),
    ("chart.census.stat.mean_distance", "mean distance", "平均距离"),
    # Units by statistic (inspector.analyses.census.STATISTIC_UNITS); every other statistic is a share of the attention.
    ("chart.census.unit.entropy", "nats", "奈特"),
    ("chart.census.unit.entropy_normalized", "entropy / log(visible keys)", "熵 / log(可见键数)"),
    ("chart.census.unit.mean_distance", "tokens", "词元"),
    ("chart.census.unit.share", "share", "比例"),
    # census_table's columns as the Heads page's table shows them.
    ("chart.census.column.name", "name", "名称"),
    ("chart.census.mean", "mean", "平均值"),
    ("chart.census.column.low", "low", "下限"),
    ("chart.census.column.high", "high", "上限"),
    ("chart.census.texts", "texts", "文本数"),
    ("chart.census.column.flag", "flag", "标记"),
    ("chart.census.legend", "{statistic} ({unit}), mean over texts", "{statistic}（{unit}），各文本的平均值"),
    ("chart.census.low", "95% interval, low", "95% 区间下限"),
    ("chart.census.high", "95% interval, high", "95% 区间上限"),
    ("chart.census.title", "Census: {statistic} over {texts} texts", "普查：{texts} 条文本上的{statistic}"),
    ("chart.census.note", "C = collapsed, D = diffuse (Heads page thresholds). Grey = no value.",
     "坍 = 坍缩，弥 = 弥散（按“注意力头”页的阈值）。灰色 = 无数值。"),
)
