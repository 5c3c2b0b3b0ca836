"""The Mechanism page (views/mechanism.py, views/mechanism_panels.py) and its charts (inspector/charts/mechanism.py)."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # The page --------------------------------------------------------------------------------------------------------
    ("mech.title", "Mechanism: which components make the prediction, and why a head looks where it does",
     "机制：哪些组件做出了预测，注意力头为什么看向那里"),
    ("mech.intro",
     "Three exact decompositions of one next-token prediction. Direct logit attribution splits the answer's logit "
     "into what every head and MLP writes; activation patching copies one part of a clean run into a corrupted one "
     "and measures how much of the answer comes back; score attribution splits one attention score into what the "
     "query's and the key's residual streams are made of. Each carries its sum rule.",
     "对一次下一个词元预测的三种精确分解。直接 logit 归因把答案的 logit 拆成每个注意力头和 MLP 写入的部分；"
     "激活修补把干净运行中的一个部分复制到被破坏的运行中，测量答案恢复了多少；"
     "得分归因把一个注意力得分拆成查询和键的残差流各由什么组成。"
     "每种分解都附带它的求和规则。"),
    ("mech.needs_decoder_short", "Mechanism needs a decoder language model", "机制页面需要解码器语言模型"),
    ("mech.needs_decoder",
     "{model} is an encoder; this page explains a next-token prediction — pick a decoder in the sidebar: "
     "{smollm2} (English) or {gemma} (reads Chinese).",
     "{model} 是编码器；本页解释下一个词元的预测——请在侧边栏选择解码器：{smollm2}（英文）或 {gemma}（能读中文）。"),
    ("mech.example_en", "English example pair", "英文示例对"),
    ("mech.example_zh", "Chinese example pair", "中文示例对"),
    ("mech.answer", "Answer token (empty: the top prediction)", "答案词元（留空：最可能的预测）"),
    ("mech.answer_help", "One token of the model's vocabulary, often with its leading space (\" Rome\").",
     "模型词表中的一个词元，通常带前导空格（\" Rome\"）。"),
    ("mech.contrast", "Contrast token (optional)", "对比词元（可选）"),
    ("mech.contrast_help", "With a contrast, the target is the logit difference answer − contrast (Wang et al. 2022).",
     "给出对比词元时，目标是 logit 差：答案 − 对比（Wang 等，2022）。"),
    ("mech.dla_header", "1 · Which heads write the answer", "1 · 哪些注意力头写出了答案"),
    ("mech.running_dla", "Splitting the prediction…", "正在分解预测…"),
    ("mech.failed", "The analysis could not run", "分析无法运行"),
    ("mech.dla_line",
     "Target at position {position}: {target} = {value} (sum-rule residual {residual}; frozen at their measured "
     "scale: {frozen}). The heads writing most of it directly: {heads}.",
     "位置 {position} 的目标：{target} = {value}（求和规则残差 {residual}；按实测尺度冻结：{frozen}）。直接写入最多的"
     "注意力头：{heads}。"),
    ("mech.lens_header", "Logit lens: what the residual stream predicts after each layer",
     "Logit 透镜：每层之后残差流预测什么"),
    ("mech.lens_embeddings", "embeddings", "嵌入"),
    ("mech.lens_after", "after layer", "所在层之后"),
    ("mech.lens_top", "top tokens", "最可能的词元"),
    ("mech.lens_rank", "rank of {answer}", "{answer} 的排名"),
    ("mech.patch_header", "2 · Which components the answer needs", "2 · 答案需要哪些组件"),
    ("mech.corrupted", "Corrupted text (same number of tokens as the sidebar's text)",
     "被破坏的文本（与侧边栏文本的词元数相同）"),
    ("mech.corrupted_help", "Change one word so the model predicts the contrast instead of the answer.",
     "改动一个词，让模型预测对比词元而不是答案。"),
    ("mech.patch_needs", "Give a corrupted text, an answer and a contrast to patch (or load an example pair).",
     "请给出被破坏的文本、答案和对比词元来进行修补（或载入示例对）。"),
    ("mech.patching_start", "Patching…", "正在修补…"),
    ("mech.patching_progress", "Patching: step {done} of {total}…", "正在修补：第 {done} 步，共 {total} 步…"),
    ("mech.running_patch", "Patching every head, MLP and residual position…", "正在修补每个注意力头、MLP 和残差位置…"),
    ("mech.stop", "Stop", "停止"),
    ("mech.stopped", "Patching was stopped.", "修补已停止。"),
    ("mech.patch_again", "Patch again", "重新修补"),
    ("mech.patch_line",
     "Logit difference {answer} − {contrast}: clean {clean}, corrupted {corrupted}. Below, 1 means patching that "
     "part alone restores the clean difference, 0 means it restores nothing.",
     "logit 差 {answer} − {contrast}：干净 {clean}，被破坏 {corrupted}。下图中 1 表示只修补这一部分"
     "就恢复了干净运行的差值，0 表示什么也没恢复。"),
    ("mech.score_header", "3 · Why this head attends here", "3 · 这个头为什么看向这里"),
    ("mech.query", "Query position", "查询位置"),
    ("mech.key", "Key position", "键位置"),
    ("mech.score_cell", "Layer {layer}, head {head} (the sidebar's), from {query} to {key}.",
     "第 {layer} 层、第 {head} 个头（侧边栏所选），从 {query} 到 {key}。"),
    ("mech.score_line", "Score {score} (sum-rule residual {residual}; frozen: {frozen}).",
     "得分 {score}（求和规则残差 {residual}；冻结：{frozen}）。"),
    ("mech.score_runner", " Runner-up key: {key} ({token}) with {score}.", " 次优键：{key}（{token}），得分 {score}。"),
    ("mech.done", "Done", "完成"),
    ("mech.download_json", "Download the numbers (JSON)", "下载数据（JSON）"),
    ("mech.link_too_long", "The link's {name} was too long and was not used.", "链接中的 {name} 过长，未被使用。"),
    # Errors of the pair and the tokens a page asks for (inspector.analyses.mechanism) --------------------------------
    ("mech.error.length_mismatch", "The clean text has {clean} tokens and the corrupted text {corrupted}; patching "
     "swaps activations position by position, so both must have the same number of tokens — change a word for one of "
     "the same token count.",
     "干净文本有 {clean} 个词元，被破坏的文本有 {corrupted} 个；修补按位置逐个交换激活，所以两段"
     "文本的词元数必须相同——请把一个词换成词元数相同的词。"),
    ("mech.error.same_tokens", "The answer and the contrast are the same token ('{token}'); the metric is their logit "
     "difference — give two different tokens.", "答案和对照是同一个词元（“{token}”）；指标是二者的 logit 差——请给出两个"
     "不同的词元。"),
    ("mech.error.token_empty", "A token to measure is empty; give one token of the model's vocabulary.",
     "要测量的词元为空；请给出模型词表里的一个词元。"),
    ("mech.error.not_one_token", "'{token}' is {count} tokens for {model} ({pieces}); a logit belongs to one token — "
     "give a single token (often with its leading space).", "“{token}”在 {model} 中是 {count} 个词元（{pieces}）；"
     "logit 属于单个词元——请给出一个词元（通常带着前面的空格）。"),
    ("mech.error.position", "Position {position} is outside the text's {length} tokens; choose 0–{last} (or −1 for "
     "the last).", "位置 {position} 超出了文本的 {length} 个词元；请选 0–{last}（或用 −1 表示最后一个）。"),
    ("mech.error.not_decoder", "{model} is not a decoder language model; the mechanism analyses explain a next-token "
     "prediction — pick a decoder such as {decoders}.", "{model} 不是解码器语言模型；机制分析解释的是下一个词元的预测——"
     "请选一个解码器，例如 {decoders}。"),
    ("mech.error.family", "The mechanism analyses do not support {model}; they support Llama, Mistral, Qwen2/3, GPT-2 "
     "and Gemma 3 decoders — pick one such as {decoders}.", "机制分析不支持 {model}；它支持 Llama、Mistral、Qwen2/3、"
     "GPT-2 和 Gemma 3 解码器——请选一个，例如 {decoders}。"),
    ("mech.error.key_after_query", "Key {key} comes after query {query}; a causal model's query sees only keys "
     "0–{query}.", "键 {key} 在查询 {query} 之后；因果模型的查询只能看到键 0–{query}。"),
    ("mech.error.outside_window", "Layer {layer} attends within a sliding window of {window} tokens; query {query} "
     "cannot see key {key} — choose a key from {first} to {query}.", "第 {layer} 层只在 {window} 个词元的滑动窗口内"
     "计算注意力；查询 {query} 看不到键 {key}——请选 {first} 到 {query} 之间的键。"),
    # The charts (inspector/charts/mechanism.py) ---------------------------------------------------------------------
    ("chart.mech.dla_title", "Direct contribution of each head to the target", "每个注意力头对目标的直接贡献"),
    ("chart.mech.dla_note", "Blue raises the target logit, red lowers it", "蓝色提高目标 logit，红色降低它"),
    ("chart.mech.layer", "layer", "层"),
    ("chart.mech.head", "head", "头"),
    ("chart.mech.logit", "logit", "logit 值"),
    ("chart.mech.attention_title", "Attention each head pays to “{token}” (position {position})",
     "每个头对“{token}”（位置 {position}）的注意力"),
    ("chart.mech.attention_note", "From the predicting position; compare with the grid on the left",
     "来自做预测的位置；与左侧网格对比"),
    ("chart.mech.weight", "weight", "权重"),
    ("chart.mech.restored", "restored (0 corrupted, 1 clean)", "恢复程度（0 被破坏，1 干净）"),
    ("chart.mech.position", "position: clean / corrupted token", "位置：干净 / 被破坏的词元"),
    ("chart.mech.residual_title", "Residual stream patched before each layer, one position at a time",
     "在每层之前逐个位置修补残差流"),
    ("chart.mech.residual_note", "Causal tracing (Meng et al. 2022)", "因果追踪（Meng 等，2022）"),
    ("chart.mech.mlp_title", "Each MLP's output patched", "修补每个 MLP 的输出"),
    ("chart.mech.patch_heads_title", "Each head's output patched at every position", "在所有位置修补每个头的输出"),
    ("chart.mech.patch_heads_note", "Activation patching (Wang et al. 2022's normalised logit difference)",
     "激活修补（Wang 等 2022 的归一化 logit 差）"),
    ("chart.mech.pairs_title", "The score {score} as query component × key component",
     "得分 {score} 拆成查询组件 × 键组件"),
    ("chart.mech.pairs_note", "The largest cells of the table; all cells sum to the score",
     "表中最大的若干格；所有格之和等于得分"),
    ("chart.mech.pair", "query × key component", "查询 × 键组件"),
    ("chart.mech.score_part", "part of the score", "得分中的部分"),
    ("chart.mech.marginals_title", "What each side is made of", "每一侧由什么组成"),
    ("chart.mech.marginals_note", "The runner-up key's split shows what makes the chosen key win",
     "次优键的分解显示了所选键为什么胜出"),
    ("chart.mech.side_query", "query side", "查询侧"),
    ("chart.mech.side_key", "key {key}", "键 {key}"),
    ("chart.mech.side_runner", "runner-up key {key}", "次优键 {key}"),
    ("chart.mech.side", "side", "侧"),
    ("chart.mech.component", "component", "组件"),
    # Component names (inspector.analyses.mechanism.residual.Component.label) and frozen norms, in the reader's language
    ("chart.mech.comp_embedding", "embedding", "嵌入"),
    ("chart.mech.comp_position", "position embedding", "位置嵌入"),
    ("chart.mech.comp_bias", "bias", "偏置"),
    ("chart.mech.comp_attn_bias", "L{layer} attn bias", "L{layer} 注意力偏置"),
    ("mech.frozen_final", "final norm", "最终归一化"),
    ("mech.frozen_post_attention", "post-attention norms", "注意力后归一化"),
    ("mech.frozen_input", "input norm", "输入归一化"),
    ("mech.frozen_query", "query norm", "查询归一化"),
    ("mech.frozen_key", "key norm", "键归一化"),
    ("chart.mech.products_title", "Per-dimension products q_d · k_d (scaled)", "逐维乘积 q_d · k_d（已缩放）"),
    ("chart.mech.products_note", "With the rotation the score is {score}; without it {plain}",
     "带旋转时得分为 {score}；不带旋转时为 {plain}"),
    ("chart.mech.rotated", "with RoPE rotation", "带 RoPE 旋转"),
    ("chart.mech.unrotated", "without rotation", "不带旋转"),
    ("chart.mech.product", "scale · q_d · k_d", "缩放 · q_d · k_d"),
    ("chart.mech.dimension", "dimension", "维度"),
)
