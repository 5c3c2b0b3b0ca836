"""The Lessons page's second part (views/lessons_decoder.py): lessons for the decoder era (issue 30) — causal masks,
RoPE, grouped-query attention, sinks, sliding windows, linear attention, the query–key space and the projection
matrices (inspector.analyses.lessons: decoder, sinks, geometry), and their quiz questions."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # The section (views/lessons_decoder.py) ---------------------------------------------------------------------------
    ("decoder.heading", "Lessons for the decoder era", "解码器时代的课程"),
    ("decoder.caption",
     "GPT-style models differ from BERT in where a token may look, how position enters, how many key/value heads "
     "they keep and what they do with a budget they cannot spend. These lessons measure it on a decoder you pick here; "
     "the sidebar's model stays as it is for the other pages.",
     "GPT 式模型与 BERT 的不同在于：词元能看向哪里、位置如何进入、保留多少个键/值头，以及无处可花的预算怎么处理。"
     "这些课程在你在这里选的解码器上测量；侧边栏的模型保持不变，其他页面不受影响。"),
    ("decoder.model", "Decoder for these lessons", "这些课程使用的解码器"),
    ("decoder.choose", "Choose a decoder…", "选择一个解码器…"),
    ("decoder.pick",
     "{model} is an encoder: pick a bundled decoder above — SmolLM2 (faster) or Gemma 3 270M (sliding windows, two "
     "RoPE θ, reads Chinese). The sidebar keeps {model}.",
     "{model} 是编码器：请在上面选一个内置解码器——SmolLM2（更快）或 Gemma 3 270M（滑动窗口、两种 RoPE θ、能读中文）。"
     "侧边栏仍保持 {model}。"),
    ("decoder.running", "Running the decoder lessons on {model}…", "正在 {model} 上运行解码器课程…"),
    ("decoder.layer", "Decoder layer", "解码器层"),
    ("decoder.head", "Decoder head", "解码器头"),
    ("decoder.measuring", "Measuring…", "正在测量…"),
    # The section's share-link parameters (inspector.output.share.decode_lessons; views/lessons_decoder.py)
    ("share.decoder", "decoder={value} {problem}; the decoder lessons use their own default instead.",
     "decoder={value} {problem}；解码器课程改用它们的默认选择。"),
    ("share.bad_decoder_index", "{key}={value} is not a number from 0 to {largest}; the decoder lessons use their "
     "default instead.", "{key}={value} 不是 0 到 {largest} 之间的数；解码器课程改用默认值。"),
    ("decoder.link_not_offered",
     "The link's decoder {model} is not one of the decoders this section offers ({choices}); pick one below.",
     "链接中的解码器 {model} 不在本节提供的解码器（{choices}）之中；请在下面选一个。"),
    # Lesson 9: causal vs bidirectional --------------------------------------------------------------------------------
    ("lesson9.title", "D1 · Causal vs bidirectional: how GPT differs from BERT",
     "D1 · 因果与双向：GPT 与 BERT 有何不同"),
    ("lesson9.question", "Where may each token look in BERT and in GPT — and what does W_Q = W_K take away?",
     "在 BERT 和 GPT 中每个词元能看向哪里？W_Q = W_K 又会拿走什么？"),
    ("lesson9.explain",
     "An encoder lets every token attend to every other (bidirectional); a decoder masks the future (causal), so "
     "each token sees only itself and what came before — which is what lets it predict the next token. With W_K := "
     "W_Q the scores S = QQᵀ are symmetric: “A attends to B” would cost exactly what “B attends to A” costs.",
     "编码器让每个词元关注所有其他词元（双向）；解码器遮住未来（因果），每个词元只能看到自己和之前的词元——这正是它能"
     "预测下一个"
     "词元的原因。令 W_K := W_Q 时得分 S = QQᵀ 对称：“A 关注 B”与“B 关注 A”的得分完全相同。"),
    ("lesson9.mask_chart", "Where each token may look: {model}", "每个词元能看向哪里：{model}"),
    ("lesson9.asym_chart", "‖S − Sᵀ‖ / ‖S‖ by head, layer {layer}: own W_K vs W_K := W_Q",
     "第 {layer} 层各头的 ‖S − Sᵀ‖ / ‖S‖：自身的 W_K 与 W_K := W_Q"),
    ("lesson9.answer",
     "On this text {encoder} ({n_e} tokens) lets each token see every token: {enc_share} of the query–key pairs are "
     "visible. {decoder} ({n_d} tokens) is causal: {dec_share} are — the future is masked. In its layer {layer}, "
     "{symmetry}: ‖S − Sᵀ‖/‖S‖ is {asym} for head {head} ({asym_min}–{asym_max} across heads; “far” means at least "
     "{asym_far}); with W_K := W_Q it is {tied}. Tying head {head} changes the next-token distribution by KL = "
     "{kl_head} nats; "
     "tying every head of the layer by {kl_layer} nats. That is how GPT differs from BERT: BERT reads the whole text "
     "in both directions, a GPT-style decoder only what came before — which is what lets it be trained to predict "
     "the next token.",
     "在这段文本上，{encoder}（{n_e} 个词元）让每个词元看到所有词元：{enc_share} 的查询–键对可见。{decoder}（{n_d} 个"
     "词元）是因果的：只有 {dec_share} 可见——未来被遮住。在它的第 {layer} 层，{symmetry}：第 {head} 个头的 "
     "‖S − Sᵀ‖/‖S‖ 为 {asym}（各头在 {asym_min}–{asym_max} 之间；“远非对称”指至少 {asym_far}）；令 W_K := W_Q 后为 "
     "{tied}。绑定第 {head} "
     "个头使下一个"
     "词元的分布改变 KL = {kl_head} 奈特；绑定该层所有头改变 {kl_layer} 奈特。这就是 GPT 与 BERT 的不同：BERT "
     "双向读整段文本，GPT 式解码器只读前面的内容——所以能被训练来预测下一个词元。"),
    ("chart.decoder.visible", "visible", "可见"),
    ("chart.decoder.masked", "masked", "被遮住"),
    ("chart.decoder.mask", "mask", "掩码"),
    ("chart.decoder.own", "own W_K", "自身的 W_K"),
    ("chart.decoder.tied", "W_K := W_Q", "W_K := W_Q"),
    ("chart.decoder.keys", "keys", "键"),
    # Lesson 10: RoPE --------------------------------------------------------------------------------------------------
    ("lesson10.title", "D2 · RoPE, live: position in Q·K only", "D2 · 现场看 RoPE：位置只进入 Q·K"),
    ("lesson10.question", "What does RoPE do — and why is shifting every position harmless?",
     "RoPE 做了什么？为什么把所有位置一起平移不会有影响？"),
    ("lesson10.explain",
     "Rotary embeddings turn each pair of q and k coordinates by an angle proportional to the position, at a speed "
     "set by θ. A dot product of two rotated vectors depends only on the difference of their angles: the score "
     "depends on the offset i − j, never on where the pair sits, and V is not rotated at all. BERT adds a learned "
     "position vector to X instead, which reaches Q, K and V alike.",
     "旋转位置编码把 q 和 k 的每一对坐标旋转一个与位置成正比的角度，转速由 θ "
     "决定。两个旋转后向量的点积只取决于角度之差："
     "得分只取决于偏移 i − j，而与这对词元所在的绝对位置无关；V 完全不旋转。BERT 则把学到的位置向量加到 X 上，"
     "Q、K、V 都会受到影响。"),
    ("lesson10.offset_chart", "Head {head}, layer {layer}: score of one q/k pair against their offset",
     "第 {layer} 层第 {head} 个头：同一对 q/k 的得分随偏移的变化"),
    ("lesson10.wave_chart", "Tokens per full turn of each q/k pair (log scale)",
     "每一对 q/k 坐标转一整圈所需的词元数（对数刻度）"),
    ("lesson10.col_model", "model", "模型"),
    ("lesson10.col_position", "position", "位置编码"),
    # The table's position kinds (inspector.analyses.lessons.common.position_kind), in words.
    ("lesson10.position.rope", "RoPE (rotary)", "RoPE（旋转）"),
    ("lesson10.position.absolute", "learned absolute", "学到的绝对位置"),
    ("lesson10.position.relative", "relative", "相对位置"),
    ("lesson10.position.unknown", "unknown", "未知"),
    ("lesson10.col_shift", "shift k", "平移 k"),
    ("lesson10.col_score", "largest score change", "得分的最大变化"),
    ("lesson10.col_relative", "relative to largest |S|", "相对最大 |S|"),
    ("lesson10.col_value", "largest V change", "V 的最大变化"),
    ("lesson10.answer",
     "Every position of {model} moved by {shift}: the largest change of any score in any layer and head is "
     "{rope_change} ({rope_rel} of the largest score) and of any value {rope_v} — {rounding} (rounding means at most "
     "{rounding_limit} of the largest score). Head {head} of layer {layer}: one q/k pair placed 0…{span} tokens apart "
     "scores at most {gap} differently with the query at position {p1} or {p2}. Its frequencies: {thetas}. Tokens "
     "per full turn of the slowest pair — {slowest}. {conclusion}",
     "把 {model} 的每个位置平移 {shift}：任意层、任意头的得分最大变化为 {rope_change}"
     "（最大得分的 {rope_rel}），值向量的最大变化为 {rope_v}——{rounding}"
     "（舍入误差指至多为最大得分的 {rounding_limit}）。第 {layer} 层第 {head} 个头：同一对 q/k 相隔 0…{span} "
     "个词元时，查询位于位置 {p1} 或 {p2} 的得分相差不超过 {gap}。它的频率：{thetas}。"
     "最慢的一对坐标转一整圈所需的词元数——{slowest}。{conclusion}"),
    ("lesson10.answer.contrast",
     "Every position of {model} moved by {shift}: the largest change of any score in any layer and head is "
     "{rope_change} ({rope_rel} of the largest score) and of any value {rope_v} — {rounding} (rounding means at most "
     "{rounding_limit} of the largest score). On {absolute}, whose learned positions are added to X, a shift of "
     "{abs_shift} changes scores by up to {abs_change} ({abs_rel} of the largest) and values by up to {abs_v}. Head "
     "{head} of layer {layer}: one q/k pair placed 0…{span} tokens apart scores at most {gap} differently with the "
     "query at position {p1} or {p2}. Its frequencies: {thetas}. Tokens per full turn of the slowest pair — "
     "{slowest}. {conclusion}",
     "把 {model} 的每个位置平移 {shift}：任意层、任意头的得分最大变化为 {rope_change}"
     "（最大得分的 {rope_rel}），值向量的最大变化为 {rope_v}——{rounding}"
     "（舍入误差指至多为最大得分的 {rounding_limit}）。而在把学到的位置加到 X 上的 {absolute} 上，平移 "
     "{abs_shift} 使得分最多变化 {abs_change}（最大得分的 {abs_rel}），值最多变化 {abs_v}。第 {layer} 层第 "
     "{head} 个头：同一对 q/k 相隔 0…{span} 个词元时，查询位于位置 {p1} 或 {p2} 的得分相差不超过 {gap}。"
     "它的频率：{thetas}。最慢的一对坐标转一整圈所需的词元数——{slowest}。{conclusion}"),
    ("lessons.rope.rounding", "rounding", "只是舍入误差"),
    ("lessons.rope.not_rounding", "more than rounding", "超出了舍入误差"),
    ("lesson10.conclusion.shown",
     "So RoPE puts position into the scores as the offset between query and key only: it rotates Q and K, leaves V "
     "untouched, and a whole text moved along scores the same.",
     "所以 RoPE 只把查询与键之间的偏移作为位置放进得分：它旋转 Q 和 K，不碰 V，整段文本一起平移，得分不变。"),
    ("lesson10.conclusion.not_shown",
     "So it is not shown here that position enters the scores as the offset only: moving the whole text changed "
     "them by more than rounding, so something besides the rotation carries position in this model.",
     "所以这里未能显示位置只以偏移的形式进入得分：整段文本平移使得分的变化超出了舍入误差，说明这个模型里除了旋转"
     "之外还有别的东西携带位置。"),
    ("chart.decoder.offset", "offset i − j", "偏移 i − j"),
    ("chart.decoder.score", "score", "得分"),
    ("chart.decoder.query_at", "query at", "查询位置"),
    ("chart.decoder.pair", "pair index", "坐标对序号"),
    ("chart.decoder.tokens_per_turn", "tokens per turn", "每圈词元数"),
    ("chart.decoder.layers", "layers", "层类型"),
    ("chart.decoder.all_layers", "every layer", "所有层"),
    # Lesson 11: grouped-query attention -------------------------------------------------------------------------------
    ("lesson11.title", "D3 · Grouped-query and multi-query attention", "D3 · 分组查询与多查询注意力"),
    ("lesson11.question", "Why do decoders keep fewer key/value heads than query heads, and what does it cost?",
     "为什么解码器的键/值头比查询头少？代价是什么？"),
    ("lesson11.explain",
     "While generating, a decoder keeps every earlier token's keys and values (the KV cache). Grouped-query "
     "attention lets several query heads read one key/value head, so the cache shrinks by the group size; "
     "multi-query attention keeps a single key/value head. The query heads of a group still differ: they share "
     "the addresses, not the questions.",
     "生成时，解码器要保存之前每个词元的键和值（KV "
     "缓存）。分组查询注意力让多个查询头共用一个键/值头，缓存按组大小缩小；"
     "多查询注意力只保留一个键/值头。同一组的查询头仍然不同：它们共用地址，而不是问题。"),
    ("lesson11.col_model", "model", "模型"),
    ("lesson11.col_heads", "query : key/value heads", "查询头∶键/值头"),
    ("lesson11.col_bytes", "KV bytes / token", "每词元 KV 字节"),
    ("lesson11.col_mha", "one K/V head per query head", "每个查询头一个 K/V 头"),
    ("lesson11.col_saving", "saving ×", "节省倍数"),
    ("lesson11.chart", "Layer {layer}: how differently two heads attend (mean JS, nats)",
     "第 {layer} 层：两个头的关注有多不同（平均 JS，奈特）"),
    ("lesson11.groups", "Query heads → key/value head: {groups}", "查询头 → 键/值头：{groups}"),
    ("lesson11.answer",
     "{model} has {heads} query heads on {kv_heads} key/value heads ({group} per group): a token costs {bytes} bytes "
     "of KV cache ({per_value} bytes a number), against {mha_bytes} with one key/value head per query head — "
     "{saving}× less. In layer {layer}, heads that share a key/value head differ by a mean JS of {shared_js} nats, "
     "heads that do not by {other_js}.",
     "{model} 有 {heads} 个查询头、{kv_heads} 个键/值头（每组 {group} 个）：每个词元占 {bytes} 字节 KV 缓存（每个数 "
     "{per_value} 字节），而每个查询头各有一个键/值头时需要 {mha_bytes} 字节——少 {saving} 倍。在第 {layer} 层，"
     "共用键/值头的头之间平均 JS 为 {shared_js} 奈特，不共用的为 {other_js}。"),
    ("lesson11.answer.mha",
     "{model} keeps one key/value head per query head ({heads}:{kv_heads}, classic multi-head attention): a token "
     "costs {bytes} bytes of KV cache ({per_value} bytes a number), nothing saved. In layer {layer} no two heads share "
     "keys; they differ by a mean JS of {other_js} nats. Pick a bundled decoder to see heads that share.",
     "{model} 每个查询头各有一个键/值头（{heads}:{kv_heads}，经典多头注意力）：每个词元占 {bytes} 字节 KV 缓存（每个数 "
     "{per_value} 字节），没有节省。在第 {layer} 层没有两个头共用键；它们之间平均 JS 为 {other_js} 奈特。选择内置解码器"
     "可以看到共用的头。"),
    ("lesson11.answer.mqa",
     "{model} has {heads} query heads on a single key/value head (multi-query attention): a token costs {bytes} bytes "
     "of KV cache ({per_value} bytes a number), against {mha_bytes} with one key/value head per query head — "
     "{saving}× less. In layer {layer} every head shares the same keys and values; two heads' rows differ by a mean "
     "JS of {shared_js} nats (0 would be the same routing, log 2 ≈ 0.69 rows with nothing in common).",
     "{model} 有 {heads} 个查询头、只有一个键/值头（多查询注意力）：每个词元占 {bytes} 字节 KV 缓存（每个数 "
     "{per_value} 字节），而每个查询头各有一个键/值头时需要 {mha_bytes} 字节——少 {saving} 倍。在第 {layer} "
     "层所有头共用同样的键和值；两个头的注意力行之间平均 JS 为 {shared_js} 奈特（0 表示路由完全相同，log 2 ≈ 0.69 "
     "表示两行毫无重叠）。"),
    ("chart.decoder.head_a", "head", "头"),
    ("chart.decoder.head_b", "other head", "另一个头"),
    ("chart.decoder.js", "JS (nats)", "JS（奈特）"),
    # Lesson 12: sinks -------------------------------------------------------------------------------------------------
    ("lesson12.title", "D4 · Why sinks exist", "D4 · 为什么会有注意力汇点"),
    ("lesson12.question", "Why does so much attention land on the first token?",
     "为什么这么多注意力落在第一个词元上？"),
    ("lesson12.explain",
     "A softmax row must spend its whole budget: the weights sum to 1. A head with nothing to fetch for a token "
     "parks the budget on a token every query can see — the first one — whose value vector is small, so the parked "
     "weight adds almost nothing (norm-weighted attention ‖α f(x)‖ shows it). Remove that parking spot and the budget "
     "is forced onto real tokens.",
     "softmax 的每一行必须花完全部预算：权重之和为 "
     "1。一个头如果对某个词元没什么可取，就把预算停放在每个查询都能看到的词元"
     "——第一个词元——上，而它的值向量很小，所以停放的权重几乎不增加任何内容（按范数加权的注意力 ‖α f(x)‖ 能看出来）。"
     "去掉这个停放处，预算就被迫分给真正的词元。"),
    ("lesson12.chart", "Weight on the first token, by layer (mean over heads and queries)",
     "各层放在第一个词元上的权重（对头和查询取平均）"),
    ("lesson12.share_chart", "Layer {layer}: the first token's share by weight and by norm",
     "第 {layer} 层：第一个词元按权重和按范数的份额"),
    ("lesson12.run", "Run the streaming-LLM experiment (a long text, three runs)",
     "运行 StreamingLLM 实验（一段长文本，三次运行）"),
    ("lesson12.col_cache", "cache", "缓存"),
    ("lesson12.col_ppl", "perplexity", "困惑度"),
    ("lesson12.cache.window", "window only ({window} recent tokens)", "只有窗口（最近 {window} 个词元）"),
    ("lesson12.cache.sinks", "window + {sinks} sink tokens", "窗口 + {sinks} 个汇点词元"),
    ("lesson12.cache.full", "full attention", "完整注意力"),
    ("lesson12.answer",
     "In {model} the first token takes {mean_mass} of the attention on average over its {layers} layers, most in "
     "layer {top_layer} ({top_mass}). In layer {layer} it gets {weight_share} of the weight and {norm_share} of the "
     "norm-weighted attention (below {ratio} × its weight share, {parking_limit}, would make it a parking spot): its "
     "value, written through W_O, has norm {v_first} against {v_rest} for the other tokens — {parking}. Removing its "
     "column and renormalising changes the output by {change_layer} ({measure}) in layer {layer}, and by "
     "{change_all} in every layer. {conclusion}",
     "在 {model} 中，第一个词元在 {layers} 层里平均获得 {mean_mass} 的注意力，第 {top_layer} 层最多"
     "（{top_mass}）。在第 {layer} 层它获得 {weight_share} 的权重，以及按范数加权的注意力的 {norm_share}（低于"
     "其权重份额的 {ratio} 倍，即 {parking_limit}，才算停放处）：它经 W_O 写出的值的范数为 {v_first}，其他词元为 "
     "{v_rest}——{parking}。去掉它那一列并重新归一化，第 {layer} 层使输出改变 {change_layer}（{measure}），所有层都"
     "这样做则改变 {change_all}。{conclusion}"),
    ("lesson12.conclusion.parking",
     "So a sink exists because a softmax row must spend its whole budget: a head with nothing to fetch parks it on "
     "the first token, the one token every query can see.",
     "所以汇点之所以存在，是因为 softmax 的每一行必须花完全部预算：没什么可取的头把预算停放在第一个词元上——唯一一个每个"
     "查询都看得到的词元。"),
    ("lesson12.conclusion.not_parking",
     "Here the first token's share of the norm-weighted attention is not below that limit, so this layer does not "
     "show it to be a parking spot; try another layer or a longer text.",
     "这里第一个词元在按范数加权的注意力中的份额不低于这个界限，所以这一层没有显示出它是停放处；试试别的层或更长的"
     "文本。"),
    ("lesson12.stream",
     "Streaming LLM on {tokens} tokens of the bundled corpus: with only the {window} most recent tokens visible the "
     "perplexity is {window_ppl}; keeping the first {sinks} tokens as well brings it to {sink_ppl}; full attention "
     "gives {full_ppl}. The caches are masks in every layer's attention (positions unchanged); the model is not "
     "touched. The gap between the first two is what the sink tokens are worth: a window-only cache throws away the "
     "parking spot the heads learned to use.",
     "在内置语料的 {tokens} 个词元上做 StreamingLLM：只看最近 {window} 个词元时困惑度为 {window_ppl}；再保留最前面 "
     "{sinks} 个词元降到 {sink_ppl}；完整注意力为 "
     "{full_ppl}。各种缓存都是每层注意力里的掩码（位置不变），模型本身不被改动。前两者之差就是汇点词元的价值："
     "只保留窗口的缓存扔掉了各个头学会使用的停放处。"),
    ("chart.decoder.layer", "layer", "层"),
    ("chart.decoder.sink_mass", "weight on token 0", "第 0 个词元上的权重"),
    ("chart.decoder.share", "share", "份额"),
    ("chart.decoder.by", "measured by", "度量方式"),
    ("chart.decoder.by_weight", "weight α", "权重 α"),
    ("chart.decoder.by_norm", "norm ‖α f(x)‖", "范数 ‖α f(x)‖"),
    # Lesson 13: sliding windows ---------------------------------------------------------------------------------------
    ("lesson13.title", "D5 · Sliding windows vs global layers", "D5 · 滑动窗口层与全局层"),
    ("lesson13.question", "What does a sliding window save, and what does it cost in reach?",
     "滑动窗口省下了什么？在可达距离上又付出了什么？"),
    ("lesson13.explain",
     "A sliding-window layer lets a token see only the w most recent tokens, so its cost grows as n·w instead of "
     "n². Gemma 3 makes 15 of its 18 layers local (w = 512) and every sixth layer global, so information from far "
     "back still arrives — through the global layers.",
     "滑动窗口层只让词元看到最近的 w 个词元，所以代价按 n·w 而不是 n² 增长。Gemma 3 的 18 层中有 15 层是局部层（w = "
     "512），"
     "每第六层是全局层，所以很远之前的信息仍能传到——通过全局层。"),
    ("lesson13.needs", "This lesson needs a model with sliding-window layers: pick Gemma 3 270M above.",
     "这一课需要带滑动窗口层的模型：请在上面选择 Gemma 3 270M。"),
    ("lesson13.run", "Measure on a long text (window + 64 tokens) and time both layers",
     "在长文本（窗口 + 64 个词元）上测量，并为两种层计时"),
    ("lesson13.chart", "Time of one layer's attention vs n (median of runs, log–log)",
     "单层注意力耗时随 n 的变化（多次运行的中位数，双对数）"),
    ("lesson13.answer",
     "{model}: {local} layers see a window of {window} tokens, {global} see everything (layers {global_list}). On "
     "{n} tokens of the bundled corpus the largest weight any query of local layer {local_layer} puts beyond its "
     "window is {beyond_local} — exactly zero — while global layer {global_layer} puts {beyond_global} of a row "
     "there. At n = {last} a local layer took {local_ms} ms and holds {local_mb} MiB of scores, a global one "
     "{global_ms} ms and {global_mb} MiB (runs spread by {spread}, within {busy}). Through the {stacked} local "
     "layers below the first global one a token can reach at most {reach} tokens back.",
     "{model}：{local} 层只看 {window} 个词元的窗口，{global} 层看全部（第 {global_list} 层）。在内置语料的 {n} "
     "个词元上，局部层 {local_layer} 的任何查询放在窗口之外的最大权重为 {beyond_local}——恰好为零——而全局层 "
     "{global_layer} 每行放在那里的权重为 {beyond_global}。n = {last} 时局部层耗时 {local_ms} 毫秒、得分占 "
     "{local_mb} MiB，全局层耗时 {global_ms} 毫秒、占 {global_mb} MiB（各次运行离散度 {spread}，未超过 {busy}）。"
     "仅靠第一个全局层之下的 {stacked} 个局部层，一个词元最多能向前到达 {reach} 个词元。"),
    ("lesson13.answer.busy",
     "{model}: {local} layers see a window of {window} tokens, {global} see everything (layers {global_list}). On "
     "{n} tokens of the bundled corpus the largest weight any query of local layer {local_layer} puts beyond its "
     "window is {beyond_local} — exactly zero — while global layer {global_layer} puts {beyond_global} of a row "
     "there. The machine was too busy to trust the timings (runs spread by {spread}, more than {busy}): at n = "
     "{last} a local layer took {local_ms} ms ({local_mb} MiB of scores), a global one {global_ms} ms ({global_mb} "
     "MiB). Through the {stacked} local layers below the first global one a token can reach at most {reach} tokens "
     "back.",
     "{model}：{local} 层只看 {window} 个词元的窗口，{global} 层看全部（第 {global_list} 层）。在内置语料的 {n} "
     "个词元上，局部层 {local_layer} 的任何查询放在窗口之外的最大权重为 {beyond_local}——恰好为零——而全局层 "
     "{global_layer} 每行放在那里的权重为 {beyond_global}。机器太忙，计时不可信（各次运行离散度 {spread}，超过 "
     "{busy}）：n = {last} 时局部层耗时 {local_ms} 毫秒（得分 {local_mb} MiB），全局层 {global_ms} 毫秒"
     "（{global_mb} MiB）。仅靠第一个全局层之下的 {stacked} 个局部层，一个词元最多能向前到达 {reach} 个词元。"),
    ("lesson13.answer.local",
     "{model}: all {local} layers see a window of {window} tokens. On {n} tokens the largest weight any query of "
     "layer {local_layer} puts beyond its window is {beyond_local} — exactly zero. At n = {last} a windowed layer "
     "took {local_ms} ms and holds {local_mb} MiB of scores, a full one {global_ms} ms and {global_mb} MiB (runs "
     "spread by {spread}, within {busy}). Through its {stacked} layers a token can reach at most {reach} tokens "
     "back.",
     "{model}：全部 {local} 层都只看 {window} 个词元的窗口。在 {n} 个词元上，第 {local_layer} "
     "层任何查询放在窗口之外的最大权重为 {beyond_local}——恰好为零。n = {last} 时窗口层耗时 {local_ms} 毫秒、"
     "得分占 {local_mb} MiB，完整层耗时 {global_ms} 毫秒、占 {global_mb} MiB（各次运行离散度 {spread}，未超过 "
     "{busy}）。通过它的 {stacked} 层，一个词元最多能向前到达 {reach} 个词元。"),
    ("lesson13.answer.local.busy",
     "{model}: all {local} layers see a window of {window} tokens. On {n} tokens the largest weight any query of "
     "layer {local_layer} puts beyond its window is {beyond_local} — exactly zero. The machine was too busy to trust "
     "the timings (runs spread by {spread}, more than {busy}): at n = {last} a windowed layer took {local_ms} ms "
     "({local_mb} MiB of scores), a full one {global_ms} ms ({global_mb} MiB). Through its {stacked} layers a token "
     "can reach at most {reach} tokens back.",
     "{model}：全部 {local} 层都只看 {window} 个词元的窗口。在 {n} 个词元上，第 {local_layer} "
     "层任何查询放在窗口之外的最大权重为 {beyond_local}——恰好为零。机器太忙，计时不可信（各次运行离散度 "
     "{spread}，超过 {busy}）：n = {last} 时窗口层耗时 {local_ms} 毫秒（得分 {local_mb} MiB），完整层 "
     "{global_ms} 毫秒（{global_mb} MiB）。通过它的 {stacked} 层，一个词元最多能向前到达 {reach} 个词元。"),
    ("chart.decoder.kind", "layer kind", "层类型"),
    ("chart.decoder.local", "local (window)", "局部（窗口）"),
    ("chart.decoder.global", "global", "全局"),
    ("chart.decoder.ms", "milliseconds", "毫秒"),
    # Lesson 14: linear attention --------------------------------------------------------------------------------------
    ("lesson14.title", "D6 · Linear attention: what it gives up", "D6 · 线性注意力：放弃了什么"),
    ("lesson14.question", "If exp(q·k) is replaced by φ(q)·φ(k), what is lost?",
     "如果把 exp(q·k) 换成 φ(q)·φ(k)，会失去什么？"),
    ("lesson14.explain",
     "Linear attention (Katharopoulos et al. 2020) writes the weight as φ(q)·φ(k) with φ = elu + 1, so "
     "O = φ(Q)(φ(K)ᵀV) / (φ(Q)Σφ(K)) costs O(n·d²) instead of O(n²·d) and never builds the n × n matrix. The price: "
     "a kernel of positive features cannot be as sharp as a softmax, so the routing blurs.",
     "线性注意力（Katharopoulos 等，2020）把权重写成 φ(q)·φ(k)，φ = elu + 1，于是 O = φ(Q)(φ(K)ᵀV) / (φ(Q)Σφ(K)) 的代价"
     "是 O(n·d²) 而不是 O(n²·d)，也从不构造 n × n 矩阵。代价是：正特征构成的核不可能像 softmax "
     "那样尖锐，路由会变模糊。"),
    ("lesson14.run", "Replace the head's softmax and time both forms", "替换该头的 softmax 并为两种形式计时"),
    ("lesson14.chart", "Head {head}: softmax weights vs linear attention", "第 {head} 个头：softmax 权重与线性注意力"),
    ("lesson14.time_chart", "Time vs n for one head (median of runs, log–log)",
     "单个头的耗时随 n 的变化（多次运行的中位数，双对数）"),
    ("lesson14.answer",
     "Head {head} of layer {layer} with φ(q)·φ(k), φ = elu + 1, in place of its softmax: each row's routing moves by "
     "a mean JS of {js_mean} nats (at most {js_max}), the mean row entropy goes from {h_soft} to {h_lin} nats — "
     "{blur} (the threshold: {blur_margin} nats higher) — and the model's output changes by {change} ({measure}). "
     "For one head of d_k = {d_k} at n = {last} the softmax took {soft_ms} ms and the linear form {lin_ms} ms; "
     "fitted over n they grow as n^{soft_exp} and n^{lin_exp} (runs spread by {spread}, within {busy}). "
     "{conclusion}",
     "第 {layer} 层第 {head} 个头用 φ(q)·φ(k)（φ = elu + 1）代替 softmax：每行的路由平均移动 JS = {js_mean} 奈特"
     "（最多 {js_max}），平均行熵从 {h_soft} 变为 {h_lin} 奈特——{blur}（以至少 {blur_margin} 奈特为界）——"
     "模型输出改变 {change}（{measure}）。对一个 d_k = {d_k} 的头，n = {last} 时 softmax 耗时 {soft_ms} 毫秒、"
     "线性形式 {lin_ms} 毫秒；按 n 拟合，分别按 n^{soft_exp} 和 n^{lin_exp} 增长（各次运行离散度 {spread}，"
     "未超过 {busy}）。{conclusion}"),
    ("lesson14.answer.busy",
     "Head {head} of layer {layer} with φ(q)·φ(k), φ = elu + 1, in place of its softmax: each row's routing moves by "
     "a mean JS of {js_mean} nats (at most {js_max}), the mean row entropy goes from {h_soft} to {h_lin} nats — "
     "{blur} (the threshold: {blur_margin} nats higher) — and the model's output changes by {change} ({measure}). "
     "The machine was too busy to trust the timings (runs spread by {spread}, more than {busy}): for one head of "
     "d_k = {d_k} at n = {last} the softmax took {soft_ms} ms and the linear form {lin_ms} ms (n^{soft_exp} and "
     "n^{lin_exp} fitted). {conclusion}",
     "第 {layer} 层第 {head} 个头用 φ(q)·φ(k)（φ = elu + 1）代替 softmax：每行的路由平均移动 JS = {js_mean} 奈特"
     "（最多 {js_max}），平均行熵从 {h_soft} 变为 {h_lin} 奈特——{blur}（以至少 {blur_margin} 奈特为界）——"
     "模型输出改变 {change}（{measure}）。机器太忙，计时不可信（各次运行离散度 {spread}，超过 {busy}）：对一个 "
     "d_k = {d_k} 的头，n = {last} 时 softmax 耗时 {soft_ms} 毫秒、线性形式 {lin_ms} 毫秒（拟合为 n^{soft_exp} 和 "
     "n^{lin_exp}）。{conclusion}"),
    # The answer's last sentence follows the blur verdict: "so linear attention gives up sharpness" only when this head
    # shows it (issue 44, item 4: a sentence written from numbers says "not shown" when they do not show it).
    ("lesson14.conclusion.blurrier",
     "So linear attention gives up the sharpness of softmax routing — the weights cannot concentrate on one key — in "
     "exchange for never building the n × n matrix.",
     "所以线性注意力放弃的是 softmax 路由的尖锐——权重无法集中到一个键上——换来的是从不构造 n × n 矩阵。"),
    ("lesson14.conclusion.not_blurrier",
     "So this head does not show the sharpness linear attention gives up: its rows did not blur by the threshold "
     "here (a head whose softmax rows are already broad has little to lose; try a sharper one, with low entropy on "
     "the Heads page). What linear attention always saves is building the n × n matrix.",
     "所以这个头没有显示线性注意力放弃的尖锐：它的行在这里没有模糊到阈值（softmax 行本来就平缓的头没什么可失去的；"
     "请换一个更尖锐的头，即“注意力头”页面上熵低的头）。线性注意力始终省下的是构造 n × n 矩阵。"),
    ("lessons.linear.blurrier", "blurrier", "更模糊"),
    ("lessons.linear.not_blurrier", "not shown to be blurrier", "未能显示更模糊"),
    ("chart.decoder.form", "form", "形式"),
    ("chart.decoder.softmax", "softmax", "softmax（指数）"),
    ("chart.decoder.linear", "linear (elu + 1)", "线性（elu + 1）"),
    # Lesson 15: the query–key space -----------------------------------------------------------------------------------
    ("lesson15.title", "D7 · The query–key space", "D7 · 查询–键空间"),
    ("lesson15.question", "Where do queries and keys live, and does “near” mean “attended”?",
     "查询和键位于什么空间？“近”是否意味着“被关注”？"),
    ("lesson15.explain",
     "AttentionViz (Yeh et al. 2023) draws one head's queries and keys in one picture. Two moves change no weight: "
     "adding one vector to every key adds the same number to a whole row of scores, and scaling queries by α and "
     "keys by 1/α leaves every q·k as it is. After them the clouds share a centre and a size, and a query close to a "
     "key tends to score it high — how much, the Spearman correlation says.",
     "AttentionViz（Yeh 等，2023）把一个头的查询和键画在同一张图里。有两种操作不改变任何权重：给每个键加同一个向量，"
     "等于给一整行得分加同一个数；把查询乘以 α、键除以 α，q·k 不变。做完之后两团点共享中心和大小，离某个键近的查询往往"
     "给它高分——程度由 Spearman 相关系数给出。"),
    ("lesson15.chart", "Head {head}, layer {layer}: queries and keys, joint PCA",
     "第 {layer} 层第 {head} 个头：查询与键的联合 PCA"),
    ("lesson15.gap_chart", "Mean ‖q‖ / mean ‖k‖ by layer", "各层的平均 ‖q‖ / 平均 ‖k‖"),
    ("lesson15.answer",
     "Head {head} of layer {layer}: after translating the keys and scaling queries by α = {alpha} (and keys by 1/α) "
     "the weights change by at most {unchanged} — nothing. The first two principal components carry {explained} of "
     "the variance. Spearman ρ between query–key distance and dot product is {rho} (p = {p}): at most −{min_rho} "
     "with p < {test_alpha}, so nearer means a higher score and the picture can be read that way. Before the "
     "rescaling, mean ‖q‖ / ‖k‖ is {gap_layer} in this layer and ranges {gap_min}–{gap_max} over the layers "
     "(largest in layer {gap_top}).",
     "第 {layer} 层第 {head} 个头：平移键、把查询乘以 α = {alpha}（键除以 α）之后，权重最多变化 {unchanged}——没有变化。"
     "前两个主成分占方差的 {explained}。查询–键距离与点积之间的 Spearman ρ 为 {rho}（p = {p}）：不高于 −{min_rho} "
     "且 p < {test_alpha}，所以越近得分越高，可以这样读这张图。"
     "重新缩放之前，这一层的平均 ‖q‖ / ‖k‖ 为 {gap_layer}，各层在 {gap_min}–{gap_max} 之间（第 {gap_top} 层最大）。"),
    ("lesson15.answer.weak",
     "Head {head} of layer {layer}: after translating the keys and scaling queries by α = {alpha} (and keys by 1/α) "
     "the weights change by at most {unchanged} — nothing. The first two principal components carry {explained} of "
     "the variance. Spearman ρ between query–key distance and dot product is {rho} (p = {p}): not at most −{min_rho} "
     "with p < {test_alpha}, so it is not shown that nearness means a higher score — do not read the picture as "
     "“close = attended”. Before the rescaling, mean ‖q‖ / ‖k‖ is "
     "{gap_layer} in this layer and ranges {gap_min}–{gap_max} over the layers (largest in layer {gap_top}).",
     "第 {layer} 层第 {head} 个头：平移键、把查询乘以 α = {alpha}（键除以 α）之后，权重最多变化 {unchanged}——没有变化。"
     "前两个主成分占方差的 {explained}。查询–键距离与点积之间的 Spearman ρ 为 {rho}（p = {p}）：没有做到不高于 "
     "−{min_rho} 且 p < {test_alpha}，所以未能显示近就意味着得分高——不要把这张图读成“近 = 被关注”。"
     "重新缩放之前，这一层的平均 ‖q‖ / ‖k‖ 为 {gap_layer}，各层在 {gap_min}–{gap_max} 之间（第 {gap_top} 层最大）。"),
    ("chart.decoder.role", "vector", "向量"),
    ("chart.decoder.query", "query", "查询"),
    ("chart.decoder.key", "key", "键"),
    ("chart.decoder.token", "token", "词元"),
    ("chart.decoder.ratio", "‖q‖ / ‖k‖", "‖q‖ / ‖k‖"),
    # Lesson 16: the projection matrices -------------------------------------------------------------------------------
    ("lesson16.title", "D8 · The projection matrices W_Q, W_K, W_V, W_O", "D8 · 投影矩阵 W_Q、W_K、W_V、W_O"),
    ("lesson16.question", "Where do Q, K and V come from, literally?", "Q、K、V 究竟从哪里来？"),
    ("lesson16.explain",
     "Each head owns a slice of the layer's projections: q = x W_Q, k = x W_K, v = x W_V (d_model → d_k) and W_O "
     "writes its output back (d_k → d_model). Their singular values say how many directions each uses and how "
     "strongly; the score form W_Q W_Kᵀ is d_model × d_model but has rank at most d_k.",
     "每个头拥有该层投影矩阵的一片：q = x W_Q，k = x W_K，v = x W_V（d_model → d_k），W_O 把输出写回（d_k → d_model）。"
     "奇异值说明每个矩阵用了多少个方向、用得多强；得分形式 W_Q W_Kᵀ 是 d_model × d_model，但秩至多为 d_k。"),
    ("lesson16.chart", "Head {head}, layer {layer}: singular values (log scale)",
     "第 {layer} 层第 {head} 个头：奇异值（对数刻度）"),
    ("lesson16.col_matrix", "matrix", "矩阵"),
    ("lesson16.col_shape", "shape", "形状"),
    ("lesson16.col_top", "largest σ", "最大 σ"),
    ("lesson16.col_smallest", "smallest σ", "最小 σ"),
    ("lesson16.answer",
     "In {model}, head {head} of layer {layer} reads x of d_model = {d_model} through W_Q, W_K and W_V of {q_shape} "
     "each and writes back through W_O of {o_shape}. Their largest singular values are {q_top}, {k_top}, {v_top} and "
     "{o_top}; W_Q's condition number is {q_cond}. The score form W_Q W_Kᵀ has {qk_rank} singular values above "
     "10⁻⁶ of its largest: at most d_k = {d_k}, however large d_model is.",
     "在 {model} 中，第 {layer} 层第 {head} 个头通过各为 {q_shape} 的 W_Q、W_K、W_V 读入 d_model = {d_model} 的 "
     "x，再通过 "
     "{o_shape} 的 W_O 写回。它们的最大奇异值分别为 {q_top}、{k_top}、{v_top} 和 {o_top}；W_Q 的条件数为 {q_cond}。得分"
     "形式 W_Q W_Kᵀ 有 {qk_rank} 个奇异值超过最大值的 10⁻⁶：至多为 d_k = {d_k}，无论 d_model 多大。"),
    ("chart.decoder.matrix", "matrix", "矩阵"),
    ("chart.decoder.index", "index", "序号"),
    ("chart.decoder.sigma", "singular value σ", "奇异值 σ"),
    # Lesson 17: the token the heads look at against the heads the answer needs ---------------------------------------
    ("lesson17.title", "D9 · Looking is not using: attention against patching",
     "D9 · 看到不等于用到：注意力与激活修补"),
    ("lesson17.question", "Are the heads that look at the telling token the heads that make the answer?",
     "盯着关键词元的那些头，就是产生答案的头吗？"),
    ("lesson17.explain",
     "Two texts one word apart (“… of Italy is” / “… of Spain is”) make the model answer differently. Where the last "
     "token's heads look is one measurement; which heads the answer needs is another: copy one head's output from the "
     "clean run into the corrupted run and see how much of the answer comes back (activation patching; 0 = the "
     "corrupted run, 100% = the clean run). The answer below is written from both lists.",
     "两段只差一个词的文本（“……意大利的首都是” / “……日本的首都是”）让模型给出不同的答案。"
     "最后一个词元的头看向哪里是一种测量；答案需要哪些头是另一种：把某个头在干净文本上的输出复制到被破坏的运行中，"
     "看答案恢复了多少（激活修补；0 = 被破坏的运行，100% = 干净的运行）。下面的回答由这两张表写成。"),
    ("lesson17.run", "Run the pair and patch every head (seconds on a bundled decoder)",
     "运行这对文本并修补每个头（内置解码器上需数秒）"),
    ("lesson17.pair", "Clean: “{clean}” · corrupted: “{corrupted}”", "干净：“{clean}” · 被破坏：“{corrupted}”"),
    ("lesson17.pair_from_text",
     "{model} does not read the example pair, so the pair is made from your text: one word replaced, the answer the "
     "model's own top prediction and the contrast its runner-up.",
     "{model} 读不了示例文本对，所以这对文本由你的文本构成：替换了一个词，答案是模型自己的首选预测，对照是次选。"),
    ("lesson17.col_attending", "Heads looking at {token} (weight)", "看向 {token} 的头（权重）"),
    ("lesson17.col_restoring", "Heads whose patching restores {answer} (share restored)",
     "修补后恢复 {answer} 的头（恢复比例）"),
    ("lesson17.col_writing", "Heads writing {answer} − {contrast} directly (logit)",
     "直接写入 {answer} − {contrast} 的头（logit）"),
    ("lesson17.open", "Open this pair on the Mechanism page", "在机制页面打开这对文本"),
    ("lesson17.answer",
     "In {model}, the last token's heads look most at {token} (position {position}); the {top} heads weighing it most "
     "are {attending}. Patching one head's clean output into the corrupted run moves the logit difference "
     "{answer} − {contrast} from {corrupted} back towards {clean} most for {restoring}. The heads writing the "
     "difference directly into the logits are {writing}.",
     "在 {model} 中，最后一个词元的头最关注 {token}（位置 {position}）；给它权重最大的 {top} 个头是 {attending}。"
     "把某一个头在干净文本上的输出修补进被破坏的运行，logit 差 {answer} − {contrast} 从 {corrupted} 向 {clean} "
     "恢复最多的是 {restoring}。直接把这个差写入 logit 的头是 {writing}。"),
    ("lesson17.verdict_none",
     "None of the {top} heads that look at {token} is among the {top} that restore {answer}: where a head looks does "
     "not say which heads the answer needs.",
     "看向 {token} 的 {top} 个头中，没有一个在恢复 {answer} 的前 {top} 个头里："
     "头看向哪里，并不说明答案需要哪些头。"),
    ("lesson17.verdict_some",
     "{shared} of the {top} heads that look at {token} are also among the {top} that restore {answer}: the two lists "
     "overlap, but attention alone would have named the wrong heads for the rest.",
     "看向 {token} 的 {top} 个头中，有 {shared} 个也在恢复 {answer} 的前 {top} 个头里："
     "两张表有重叠，但只看注意力，其余的头就会认错。"),
    ("lesson17.verdict_all",
     "The {top} heads that look at {token} are the {top} that restore {answer}: here attention and patching agree — "
     "on this pair, which is what a measurement can say.",
     "看向 {token} 的 {top} 个头正是恢复 {answer} 的前 {top} 个头：在这对文本上，注意力与修补一致——这也只是这对文本上的"
     "测量结论。"),
    # Errors of the decoder lessons (inspector.analyses.lessons: decoder, geometry, sinks) ----------------------------
    ("decoder.error.not_decoder", "{model} is not a causal language model; pick a bundled decoder (SmolLM2 or "
     "Gemma 3).", "{model} 不是因果语言模型；请选一个内置解码器（SmolLM2 或 Gemma 3）。"),
    ("decoder.error.no_room_to_shift", "The text's {tokens} tokens leave no room to shift positions in {model}; "
     "shorten the text.", "这段文本的 {tokens} 个词元让 {model} 没有平移位置的余地；请缩短文本。"),
    ("decoder.error.no_rope", "{model} does not use rotary position embeddings; pick a bundled decoder (SmolLM2 or "
     "Gemma 3) for this lesson.", "{model} 不使用旋转位置编码；这节课请选一个内置解码器（SmolLM2 或 Gemma 3）。"),
    ("decoder.error.no_window", "{model} has no sliding-window layer; pick Gemma 3 270M (15 of its 18 layers see a "
     "512-token window).", "{model} 没有滑动窗口层；请选 Gemma 3 270M（它的 18 层中有 15 层只看 512 个词元的窗口）。"),
    ("decoder.error.text_within_window", "The text has {tokens} tokens, not more than the window of {window}; use a "
     "longer text.", "这段文本有 {tokens} 个词元，没有超过 {window} 个词元的窗口；请用更长的文本。"),
    # The quiz's questions on these lessons (views/lesson_quiz.py) -----------------------------------------------------
    ("quiz.decoder.heading", "Questions on the decoder lessons", "关于解码器课程的问题"),
    ("quiz.decoder.choice", "Your answer", "你的答案"),
    ("quiz.decoder.choose", "Choose an answer…", "选择一个答案…"),
    ("quiz.decoder.right", "Right. {fact}", "答对了。{fact}"),
    ("quiz.decoder.wrong", "Not quite. {fact}", "不太对。{fact}"),
    ("quiz.rope.q", "Every position of {model} moves by {shift}. How much do its attention scores change?",
     "把 {model} 的每个位置都平移 {shift}。它的注意力得分会变化多少？"),
    ("quiz.rope.a0", "Not at all, up to rounding", "完全不变（只差舍入误差）"),
    ("quiz.rope.a1", "A little, mostly for distant pairs", "略有变化，主要是相距远的词元对"),
    ("quiz.rope.a2", "A lot: every score moves", "变化很大：每个得分都会动"),
    ("quiz.rope.fact", "The largest change measured was {change} ({relative} of the largest score).",
     "实测的最大变化为 {change}（最大得分的 {relative}）。"),
    ("quiz.sink.q", "In {model}, which token receives the most attention, summed over every query of layer {layer}?",
     "在 {model} 的第 {layer} 层，把所有查询加起来，哪个词元获得的注意力最多？"),
    ("quiz.sink.a0", "The first token", "第一个词元"),
    ("quiz.sink.a1", "A token in the middle of the text", "文本中间的某个词元"),
    ("quiz.sink.a2", "The last token", "最后一个词元"),
    ("quiz.sink.fact", "The first token gets {first} of the weight in layer {layer}; the most-attended other key "
     "{other}.",
     "第 {layer} 层第一个词元获得 {first} 的权重；其他键中获得最多的是 {other}。"),
    ("quiz.gqa.q", "{model} has {heads} query heads on {kv_heads} key/value heads. How much smaller is its KV cache "
     "than with one key/value head per query head?",
     "{model} 有 {heads} 个查询头、{kv_heads} 个键/值头。与每个查询头各有一个键/值头相比，它的 KV 缓存小多少？"),
    ("quiz.gqa.fact", "{bytes} bytes per token against {mha_bytes}: {saving}× smaller.",
     "每个词元 {bytes} 字节，对比 {mha_bytes} 字节：小 {saving} 倍。"),
    ("quiz.gqa.option", "{factor}× smaller", "小 {factor} 倍"),
)
