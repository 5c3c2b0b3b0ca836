"""The Compare page (views/compare.py), its one-sentence summary and its charts."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # The page (views/compare.py) --------------------------------------------------------------------------------------
    ("compare.title", "Compare: two texts or two models", "对比：两段文本或两个模型"),
    ("compare.caption",
     "Which heads move a token's attention between two texts (or two models), by how much, and does the model's "
     "output move with them? Tokens are aligned; the query's two attention rows are compared in every head.",
     "两段文本（或两个模型）之间，哪些头改变了一个词元的注意力、改变了多少，模型的输出是否随之改变？先对齐词元，"
     "再在每个头中比较查询词元的两行注意力。"),
    ("compare.mode", "Compare", "对比方式"),
    ("compare.mode_texts", "Two texts, one model", "两段文本，一个模型"),
    ("compare.mode_models", "Two models, one text", "两个模型，一段文本"),
    ("compare.examples", "Example pairs", "示例对"),
    ("compare.examples_placeholder", "Pick a pair of texts…", "选择一对文本…"),
    ("compare.text_a", "Text A (the sidebar's text)", "文本 A（即侧边栏的文本）"),
    ("compare.text_help", "Press Ctrl+Enter or click outside the box to run.",
     "按 Ctrl+Enter 或点击文本框外即可运行。"),
    ("compare.text_b", "Text B", "文本 B"),
    ("compare.model_a", "Model A: {model} (the sidebar's model)", "模型 A：{model}（侧边栏中的模型）"),
    ("compare.model_b", "Model B", "模型 B"),
    ("compare.model_b_help",
     "Heads are compared one to one, so model B needs the same layers × heads and the same tokenizer (a base model "
     "and its fine-tune).",
     "注意力头一一对应比较，所以模型 B 需要相同的层数 × 头数和相同的分词器（例如基础模型与其微调版本）。"),
    ("compare.computing", "Running both texts through every head…", "正在让两段文本经过每个头…"),
    ("compare.failed", "The comparison could not be computed", "无法完成对比"),
    ("compare.query", "Query token (whose attention row is compared)", "查询词元（比较它的注意力行）"),
    ("compare.query_help", "“auto” is the first token where the two texts differ.",
     "“自动”即两段文本中第一个不同的词元。"),
    # The automatic choice's label stays the same whatever the texts (Streamlit keeps a selectbox's value as its
    # label: "auto (11: [UNK])" stayed on screen after the texts changed; issue 31); the caption under the boxes
    # names the query the comparison read.
    ("compare.query_auto", "auto", "自动"),
    ("compare.query_used", "Query read: “{token}”{auto}.", "读取的查询：“{token}”{auto}。"),
    ("compare.query_used_auto", " (chosen automatically)", "（自动选择）"),
    ("compare.key_none", "none", "无"),
    ("compare.key1", "Key 1 (attention moves from)", "键 1（注意力从这里移出）"),
    ("compare.keys_help",
     "Key shift = ½[(B − A) on key 2 − (B − A) on key 1]: exactly x when a mass x moves from key 1 to key 2.",
     "键转移 = ½[(B − A) 在键 2 上 − (B − A) 在键 1 上]：当 x 的注意力从键 1 移到键 2 时恰好等于 x。"),
    ("compare.key2", "Key 2 (attention moves to)", "键 2（注意力移到这里）"),
    ("compare.ran", "{model_a} / {model_b}: {n_a} and {n_b} tokens, {backend} backend, {ms} ms",
     "{model_a} / {model_b}：{n_a} 和 {n_b} 个词元，{backend} 后端，{ms} 毫秒"),
    ("compare.alignment", "Aligned tokens", "对齐后的词元"),
    ("compare.alignment_caption",
     "= same token in both, ~ replaced (the slot is still compared), + only in this text (its attention goes to the "
     "“other” bucket).",
     "= 两边相同，~ 被替换（该位置仍参与比较），+ 只在这段文本中出现（它得到的注意力计入“其他”项）。"),
    ("compare.identical", "The two inputs are identical: every difference below is 0.",
     "两个输入完全相同：下面的每个差异都是 0。"),
    ("compare.metric_moved", "Heads that moved", "发生变化的头"),
    ("compare.metric_moved_help", "With two keys: key shift above {shift}. Without: JS divergence above {js} nats.",
     "有两个键时：键转移大于 {shift}。没有键时：JS 散度大于 {js} 奈特。"),
    ("compare.metric_output", "Output change", "输出变化"),
    ("compare.metric_top", "Top prediction A → B", "首选预测 A → B"),
    ("compare.ranked", "Heads ranked by how far the query's attention moved", "按查询词元注意力变化大小排序的头"),
    ("compare.grid", "Every head: click a cell to show its two heatmaps", "所有头：点击一个格子查看它的两张热力图"),
    ("compare.colour_by", "Colour by", "着色依据"),
    ("compare.colour_js", "JS divergence", "JS 散度"),
    ("compare.colour_shift", "Key shift", "键转移"),
    ("compare.colour_entropy", "Entropy change", "熵变化"),
    ("compare.pair", "Layer {layer}, head {head}: text A, text B and B − A",
     "第 {layer} 层第 {head} 个头：文本 A、文本 B 和 B − A"),
    ("compare.pair_caption",
     "The query's row is outlined. B − A is drawn on the aligned tokens only (a replaced slot counts as one token); "
     "red = more attention in B, blue = more in A.",
     "查询词元所在的行已用框标出。B − A 只画在对齐的词元上（被替换的位置算作一个词元）；红色 = B 中注意力更多，蓝色 "
     "= A 中更多。"),
    ("compare.loo_button", "Leave-one-out on both texts (does the output need the tokens that moved?)",
     "对两段文本做逐一删除（输出是否需要注意力移动到的词元？）"),
    ("compare.loo_running", "Removing each token in turn, in both texts…", "正在两段文本中依次移除每个词元…"),
    ("compare.loo_caption",
     "The Attribution page's occlusion: f(x) − f(x with the token {removed}), f = {target}. Attention says where a "
     "head read; this says what the output needed.",
     "与归因页面相同的遮挡法：f(x) − f(把该词元{removed}后的 x)，f = {target}。注意力说明头读了哪里；"
     "这里说明输出需要什么。"),
    ("compare.loo_removed_each", "{a} in A, {b} in B", "A 中{a}，B 中{b}"),
    ("compare.loo_token", "token", "词元"),
    ("compare.loo_attention", "{text}: attention L{layer} H{head}", "{text}：第 {layer} 层第 {head} 个头的注意力"),
    ("compare.loo_removal", "{text}: leave-one-out", "{text}：逐一删除"),
    ("compare.download", "Numbers (JSON)", "数据（JSON）"),
    ("compare.server_time", "Server time for this view: {ms} ms", "本视图的服务器耗时：{ms} 毫秒"),
    # The example pairs and the one-sentence summary (inspector.analyses.compare) --------------------------------------
    ("compare.example_coreference", "Coreference: too tired / too wide", "指代：太累 / 太宽"),
    ("compare.example_coreference_zh", "Coreference in Chinese: 太累 / 太宽 (Gemma 3 270M reads it)",
     "指代（中文）：太累 / 太宽"),
    # A pair not worth comparing token by token (inspector.analyses.compare.pair_warning; MIN_EQUAL_SHARE)
    ("compare.warn_scripts",
     "Text A and text B are written in different scripts: only {share} of their tokens pair up, so the pairs below "
     "match unrelated words — write B in A's language (the examples include a Chinese pair).",
     "文本 A 与文本 B 用的是不同的文字：只有 {share} 的词元能配对，下面的配对是不相关的词——请用 A 的语言写 B"
     "（示例里有一对中文句子）。"),
    ("compare.warn_alignment",
     "Only {share} of the two texts' tokens pair up (below {threshold}): they are not a minimal pair, so the pairs "
     "below match unrelated words — change one word of A to make B.",
     "两段文本只有 {share} 的词元能配对（低于 {threshold}）：它们不是只差一处的一对句子，下面的配对是不相关的词——"
     "请只改 A 中的一个词得到 B。"),
    # A query before the first difference on a causal model (inspector.analyses.token_alignment.causal_blind)
    ("compare.warn_causal_query",
     "On a causal model a token attends only to itself and the tokens before it: the query “{token}” comes before "
     "the first difference (“{first}”, position {position}), so it reads the same keys in both texts and its row "
     "cannot change. Pick “{first}” or a later token as the query.",
     "因果模型中，词元只能关注自身和它之前的词元：查询“{token}”位于第一处差异（“{first}”，位置 {position}）之前，"
     "在两段文本中读到的键完全相同，它的注意力行不可能变化。请选择“{first}”或其后的词元作为查询。"),
    ("compare.example_agreement", "Agreement: the key … is / the keys … are", "一致：单数 / 复数"),
    ("compare.example_negation", "Negation: is / is not", "否定：是 / 不是"),
    ("compare.sentence_keys",
     "In {moved} of {total} heads “{query}” moves more than half of its attention from “{key1}” to “{key2}” (most: "
     "layer {layer}, head {head}, {shift})",
     "在 {total} 个头中，有 {moved} 个头里“{query}”把一半以上的注意力从“{key1}”移到了“{key2}”（最多的是第 {layer} "
     "层第 {head} 个头，{shift}）"),
    ("compare.sentence_js",
     "The attention of “{query}” moves most in layer {layer}, head {head} (Jensen–Shannon divergence {js} nats, at "
     "most 0.693); {moved} of {total} heads {moved|moves|move} by more than {threshold} nats",
     "“{query}”的注意力在第 {layer} 层第 {head} 个头变化最大（Jensen–Shannon 散度 {js} 奈特，最大 0.693）；{total} "
     "个头中有 {moved} 个变化超过 {threshold} 奈特"),
    ("compare.sentence_output_none", "the two outputs cannot be compared (different vocabularies or labels).",
     "两个输出无法比较（词表或类别不同）。"),
    ("compare.sentence_output_embedding", "the sentence embedding moves by {change} (cosine distance).",
     "句向量移动了 {change}（余弦距离）。"),
    ("compare.sentence_output_distribution",
     "the predicted-token distribution moves by {change} nats (KL); the top prediction goes from “{top_a}” to "
     "“{top_b}”, and the probability of “{top_a}” changes by {delta}.",
     "预测词元分布变化 {change} 奈特（KL）；首选预测从“{top_a}”变为“{top_b}”，“{top_a}”的概率变化 {delta}。"),
    ("compare.sentence_output_logits",
     "the largest class logit moves by {change}; the top class goes from “{top_a}” to “{top_b}”, and the probability "
     "of “{top_a}” changes by {delta}.",
     "类别 logit 最大变化 {change}；首选类别从“{top_a}”变为“{top_b}”，“{top_a}”的概率变化 {delta}。"),
    ("compare.sentence", "{attention}; {output}", "{attention}；{output}"),
    # Two models of different shapes (inspector.analyses.compare_shapes, issue 27) ------------------------------------
    ("compare.shapes_special", "the special tokens", "特殊词元"),
    ("compare.shapes_sentence",
     "{model_a} ({shape_a} heads) and {model_b} ({shape_b}) have no head-to-head partners, so they are compared on "
     "what both have: reading “{query}”, {model_a} puts {share_a} of its attention (mean over every layer and head) "
     "on “{top_a}” and {model_b} {share_b} on “{top_b}”; the two distributions are {js} nats apart (JS divergence, "
     "0 = same, 0.693 = disjoint).",
     "{model_a}（{shape_a} 个头）和 {model_b}（{shape_b}）的头无法一一对应，所以只比较两者都有的量：读“{query}”时，"
     "{model_a} 把 {share_a} 的注意力（对所有层和头取平均）放在“{top_a}”上，{model_b} 把 {share_b} 放在“{top_b}”上；"
     "两个分布相差 {js} 奈特（JS 散度，0 = 相同，0.693 = 完全不重叠）。"),
    ("compare.shapes_output",
     "The outputs are not comparable across these models (an embedding, a next-token distribution over another "
     "vocabulary), so no output change is given.",
     "这两个模型的输出不可比较（一个是句子嵌入，一个是另一套词表上的下一个词元分布），所以不给出输出变化。"),
    ("compare.shapes_heading", "Two models of different shapes: what can be compared",
     "两个结构不同的模型：能比较什么"),
    ("compare.shapes_intro",
     "{model_a}: {layers_a} layers × {heads_a} heads ({kv_a} key/value), {tokens_a} tokens; {model_b}: {layers_b} × "
     "{heads_b} ({kv_b} key/value), {tokens_b} tokens. Heads cannot be paired one to one, so the page shows each "
     "model's own profile side by side: entropy by relative depth, and the attention of one piece of the text to "
     "every piece, on the pieces both tokenizers agree on.",
     "{model_a}：{layers_a} 层 × {heads_a} 个头（{kv_a} 个键/值头），{tokens_a} 个词元；{model_b}：{layers_b} × "
     "{heads_b}（{kv_b} 个键/值头），{tokens_b} 个词元。头无法一一配对，所以本页并排显示每个模型自己的概况：按相对深度"
     "的熵，以及文本中一个片段对每个片段的注意力（片段取两个分词器都认可的切分）。"),
    ("compare.shapes_query", "Query piece (read at its last token)", "查询片段（在它的最后一个词元处读取）"),
    ("compare.shapes_download", "Numbers (JSON)", "数据（JSON）"),
    # The two models' atlases (views/compare_atlas.py, issue 41) ------------------------------------------------------
    ("compare.atlas.title", "Head atlases of the two models, side by side", "两个模型的注意力头图谱并排对比"),
    ("compare.atlas.caption",
     "Each model's atlas (every head placed by what it does over a corpus, from a census): the one that ships with "
     "the app, or your own census folder. Both maps use the same axes and colour; click a head for its card.",
     "每个模型的图谱（根据普查，按每个头在语料上的表现放置所有头）：应用附带的图谱，或你自己的普查文件夹。两张图使用"
     "相同的坐标轴和颜色；点击一个头打开它的卡片。"),
    ("compare.atlas.model", "Model {side}: {model}", "模型 {side}：{model}"),
    ("compare.atlas.folder", "Census folder for model {side} (optional)", "模型 {side} 的普查文件夹（可选）"),
    ("compare.atlas.folder_placeholder", "empty: the shipped atlas", "留空：使用附带的图谱"),
    ("compare.atlas.missing",
     "No atlas of {model}: make one with `{command}` and give its folder here.",
     "{model} 没有图谱：用 `{command}` 生成一个，再在此处填入它的文件夹。"),
    ("compare.atlas.missing_hosted",
     "No atlas of {model} ships here: make one on your own machine with `{command}` and open it on a local instance.",
     "此处没有 {model} 的附带图谱：在你自己的机器上用 `{command}` 生成一个，并在本地实例中打开。"),
    ("compare.atlas.other_model", "This census is of {atlas}, not of {model}.",
     "此普查的模型是 {atlas}，不是 {model}。"),
    ("compare.atlas.open", "Open on the Atlas page", "在图谱页中打开"),
    ("compare.atlas.open_help", "Open the Atlas page on this atlas, at layer {layer}, head {head}, with these axes.",
     "打开图谱页，显示此图谱的第 {layer} 层第 {head} 个头，并使用相同的坐标轴。"),
    ("chart.compare.shapes_entropy_title", "Entropy by relative depth", "按相对深度的熵"),
    ("chart.compare.shapes_entropy_note",
     "Each layer's mean normalised entropy (0 = one key, 1 = uniform) at (layer + ½) / layers.",
     "每层的平均归一化熵（0 = 只看一个键，1 = 均匀）位于（层 + ½）/ 层数处。"),
    ("chart.compare.shapes_depth", "relative depth (input → output)", "相对深度（输入 → 输出）"),
    ("chart.compare.shapes_entropy", "entropy / log(keys)", "熵 / log(键数)"),
    ("chart.compare.shapes_model", "model", "模型"),
    ("chart.compare.shapes_attention_title", "Attention of “{query}” by piece", "“{query}”对各片段的注意力"),
    ("chart.compare.shapes_attention_note", "Mean over every layer and head; the last bar: special tokens.",
     "对所有层和头取平均；最后一条：特殊词元。"),
    ("chart.compare.shapes_piece", "piece of the text", "文本片段"),
    ("chart.compare.shapes_share", "share of attention", "注意力占比"),
    # Errors of the two runs and the tokens a page asks for (inspector.analyses.compare, token_alignment) -------------
    ("compare.error.shapes", "{model_a} has {layers_a} layers × {heads_a} heads and {model_b} {layers_b} × "
     "{heads_b}: heads can only be compared one to one between models of the same shape — pick a model of the same "
     "architecture (a base model and its fine-tune).", "{model_a} 有 {layers_a} 层 × {heads_a} 个头，{model_b} 有 "
     "{layers_b} × {heads_b}：只有形状相同的模型才能逐个头对比——请选同一架构的模型（例如基础模型和它的微调版）。"),
    ("compare.error.tokenizers", "{model_a} and {model_b} split the text differently, so attention rows cannot be "
     "matched token by token — compare models that share a tokenizer.", "{model_a} 和 {model_b} 对这段文本的切分"
     "不同，注意力行无法逐词元对应——请对比共用分词器的模型。"),
    ("compare.error.too_long", "A text has {tokens} tokens; Compare keeps every layer's attention weights of both "
     "texts and reads at most {limit} — compare a sentence or two, not a document.",
     "有一段文本有 {tokens} 个词元；对比会保留两段文本每一层的注意力权重，最多读取 {limit} 个——请对比一两句话，而不是"
     "整篇文档。"),
    ("compare.error.same_keys", "The two keys are the same token '{token}'; pick two different tokens.",
     "两个键是同一个词元“{token}”；请选两个不同的词元。"),
    ("compare.error.no_shared_token", "The two texts share no token that could serve as the query; make them differ "
     "in a word or two, not throughout.", "两段文本没有可以作为查询的共同词元；请让它们只差一两个词，而不是处处不同。"),
    ("compare.error.no_position", "Position {position} does not exist: text A has tokens 0–{last}.",
     "位置 {position} 不存在：文本 A 只有词元 0–{last}。"),
    ("compare.error.no_partner", "'{token}' (position {position}) has no partner in text B (it was inserted or "
     "deleted); pick a token both texts have.", "“{token}”（位置 {position}）在文本 B 中没有对应词元（它是插入或删除"
     "的）；请选两段文本都有的词元。"),
    ("compare.error.not_shared", "'{token}' is not a token both texts have; tokens with a partner: {tokens}.",
     "“{token}”不是两段文本共有的词元；有对应的词元：{tokens}。"),
    # Charts (inspector.charts.compare) --------------------------------------------------------------------------------
    ("chart.compare.legend_js", "JS divergence of the query's rows (nats)", "查询词元两行的 JS 散度（奈特）"),
    ("chart.compare.legend_shift", "key shift: mass moved from key 1 to key 2", "键转移：从键 1 移到键 2 的注意力"),
    ("chart.compare.legend_entropy", "entropy change of the query's row, B − A (nats)",
     "查询词元所在行的熵变化，B − A（奈特）"),
    ("chart.compare.rank", "rank (1 = moved most)", "排名（1 = 变化最大）"),
    ("chart.compare.js", "JS divergence (nats)", "JS 散度（奈特）"),
    ("chart.compare.entropy", "entropy change (nats)", "熵变化（奈特）"),
    ("chart.compare.shift", "key shift", "键转移"),
    ("chart.compare.layer", "layer", "层"),
    ("chart.compare.grid_title", "How far “{query}” moved its attention, head by head",
     "“{query}”的注意力在每个头中移动了多少"),
    ("chart.compare.grid_subtitle", "Click a cell to show that head's two heatmaps.",
     "点击一个格子，查看该头的两张热力图。"),
    ("chart.compare.ranked_title", "Top {count} heads: “{query}”", "变化最大的 {count} 个头：“{query}”"),
    ("chart.compare.ranked_subtitle", "JS divergence of the aligned rows (0 = same, 0.693 = disjoint).",
     "对齐后两行的 JS 散度（0 = 相同，0.693 = 完全不重叠）。"),
    ("chart.compare.key_axis", "key (attended to)", "键（被关注）"),
    ("chart.compare.query_axis", "query (attending)", "查询（发出关注）"),
    ("chart.compare.query_token", "query token", "查询词元"),
    ("chart.compare.key_token", "key token", "键词元"),
    ("chart.compare.weight", "weight", "权重"),
    ("chart.compare.heatmap_title", "Text {side}: layer {layer}, head {head}",
     "文本 {side}：第 {layer} 层第 {head} 个头"),
    ("chart.compare.heatmap_subtitle", "Query row {label} outlined.", "已框出查询行 {label}。"),
    ("chart.compare.difference_title", "B − A: layer {layer}, head {head}", "B − A：第 {layer} 层第 {head} 个头"),
    ("chart.compare.difference_subtitle", "On the aligned tokens; red = more attention in B.",
     "只画对齐的词元；红色 = B 中注意力更多。"),
    ("chart.compare.other", "other (no partner)", "其他（无对应词元）"),
    ("chart.compare.text", "text", "文本"),
    ("chart.compare.attention_weight", "attention weight", "注意力权重"),
    ("chart.compare.key", "key", "键"),
    ("chart.compare.rows_title", "Row of the query, layer {layer}, head {head}", "查询行：第 {layer} 层第 {head} 个头"),
    ("chart.compare.rows_subtitle", "A and B; “other” = keys without a partner.",
     "A 与 B；“其他” = 没有对应词元的键。"),
)
