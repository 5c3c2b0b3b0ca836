"""The Lessons page (views/lessons.py, views/lesson_quiz.py): each lesson's question, explanation, widgets,
answer (inspector.analyses.lessons) and charts, lesson by lesson."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # The page (views/lessons.py) --------------------------------------------------------------------------------------
    ("lessons.title", "Lessons: the questions people fumble, answered on this model",
     "课程：大家常答不好的问题，用这个模型现场回答"),
    ("lessons.caption",
     "Every number below is measured on the model and text in the sidebar; every answer is written from those "
     "numbers.",
     "下面每个数字都是在侧边栏选定的模型和文本上实测的；每段答案都由这些数字生成。"),
    ("lessons.layer", "Layer", "层"),
    ("lessons.head", "Head", "头"),
    ("lessons.running", "Running the lessons' experiments…", "正在运行课程实验…"),
    ("lessons.done", "Measured {model} on {n} tokens, layer {layer}, head {head} ({backend} backend)",
     "已在 {n} 个词元上测量 {model}，第 {layer} 层第 {head} 个头（{backend} 后端）"),
    ("lessons.question", "Question:", "问题："),
    ("lessons.named_value", "{name}: {value}", "{name}：{value}"),
    ("lessons.list_separator", ", ", "，"),
    ("lessons.number_separator", ", ", "、"),
    ("lessons.answer", "Answer, from the numbers measured above", "答案（根据上面实测的数字）"),
    ("lessons.simulation", "Simulation (seeded, not the model): {queries} random queries × {keys} keys, seed {seed}.",
     "模拟（固定随机种子，不是模型）：{queries} 个随机查询 × {keys} 个键，种子 {seed}。"),
    # Lesson 1 ---------------------------------------------------------------------------------------------------------
    ("lesson1.title", "1 · The definition, with real shapes", "1 · 定义，用真实的形状"),
    ("lesson1.question", "What exactly are X, Q, K, V, S, A and O — and how big are they here?",
     "X、Q、K、V、S、A、O 到底是什么？在这里它们有多大？"),
    ("lesson1.explain",
     "Attention is soft addressing: each query (intent) is compared with every key (address label); the scores S = "
     "QKᵀ·scale become weights A = softmax(S), each row a budget of 1; the output O = AV fetches the values "
     "(payload) with those weights.",
     "注意力是一种软寻址：每个查询（意图）与每个键（地址标签）比较；得分 S = QKᵀ·scale 经 softmax 变成权重 A，"
     "每一行是总额为 1 的预算；输出 O = AV 按这些权重取回值（内容）。"),
    ("lesson1.shapes", "Tensor shapes in this layer", "本层张量的形状"),
    ("lesson1.col_tensor", "tensor", "张量"),
    ("lesson1.col_shape", "shape", "形状"),
    ("lesson1.col_values", "row 0, first values", "第 0 行的前几个数值"),
    ("lesson1.rope_note", "Q and K are shown as the layer received them: after the rotary embedding (RoPE).",
     "Q 和 K 按该层实际收到的样子显示：已经过旋转位置编码（RoPE）。"),
    ("lesson1.chart", "A = softmax(S) · layer {layer}, head {head}", "A = softmax(S) · 第 {layer} 层第 {head} 个头"),
    ("lesson1.col_query", "query", "查询"),
    ("lesson1.answer.prenorm",
     "In layer {layer} the attention reads X = LN(x) — this is a pre-LN model, so the layer norm comes first — of "
     "{n} tokens × d_model = {d_model}. Each of its {heads} heads ({kv_heads} key/value heads) projects X to Q, K "
     "and V of {n} × d_k = {d_k}. S = QKᵀ × {scale} is {n} × {n}, and every row of A = softmax(S) sums to 1 (largest "
     "deviation {row_error}): a fixed routing budget per query. In head {head} {sharpest} is “{query}”, which "
     "spends {weight} of its budget on “{key}”. O = AV is again {n} × {d_k} per head; the heads are concatenated "
     "back to {n} × {d_model}.",
     "在第 {layer} 层，注意力读入的是 X = LN(x)——这是 pre-LN 模型，先做层归一化——共 {n} 个词元 × d_model = "
     "{d_model}。它的 {heads} 个头（{kv_heads} 个键/值头）各自把 X 投影成 {n} × d_k = {d_k} 的 Q、K、V。S = QKᵀ × "
     "{scale} 是 {n} × {n} 的矩阵，A = softmax(S) 的每一行之和都是 1（最大偏差 {row_error}）：每个查询有固定的路由预"
     "算。在第 {head} 个头中{sharpest}是“{query}”，它把 {weight} 的预算给了“{key}”。O = AV 每个头仍是 {n} × {d_k}；"
     "各头拼接后回到 {n} × {d_model}。"),
    ("lesson1.sharpest", "the sharpest row", "最集中的一行"),
    ("lesson1.sharpest_seeing",
     "the sharpest row among those that see two or more keys (under the causal mask the first row sees only itself "
     "and puts all its weight there by construction)",
     "在能看到两个及以上键的行中最集中的一行（因果掩码下第一行只能看到自己，必然把全部权重给自己）"),
    ("lesson1.answer",
     "In layer {layer} the attention reads X of {n} tokens × d_model = {d_model}. Each of its {heads} heads "
     "({kv_heads} key/value heads) projects X to Q, K and V of {n} × d_k = {d_k}. S = QKᵀ × {scale} is {n} × {n}, "
     "and every row of A = softmax(S) sums to 1 (largest deviation {row_error}): a fixed routing budget per query. "
     "In head {head} {sharpest} is “{query}”, which spends {weight} of its budget on “{key}”. O = AV is again "
     "{n} × {d_k} per head; the heads are concatenated back to {n} × {d_model}.",
     "在第 {layer} 层，注意力读入的 X 是 {n} 个词元 × d_model = {d_model}。它的 {heads} 个头（{kv_heads} 个键/值头）"
     "各自把 X 投影成 {n} × d_k = {d_k} 的 Q、K、V。S = QKᵀ × {scale} 是 {n} × {n} 的矩阵，A = softmax(S) "
     "的每一行之和都是 1（最大偏差 {row_error}）：每个查询有固定的路由预算。在第 {head} 个头中{sharpest}是"
     "“{query}”，它把 {weight} 的预算给了“{key}”。O = AV 每个头仍是 {n} × {d_k}；各头拼接后回到 {n} × {d_model}。"),
    # Lesson 2 ---------------------------------------------------------------------------------------------------------
    ("lesson2.title", "2 · Why not softmax(XXᵀ)X?", "2 · 为什么不直接用 softmax(XXᵀ)X？"),
    ("lesson2.question", "Why do queries and keys need separate projections W_Q and W_K?",
     "为什么查询和键需要各自的投影 W_Q 和 W_K？"),
    ("lesson2.explain",
     "Without projections every token's score with itself is its squared norm, usually the largest, so it mostly "
     "attends to itself; and x_i·x_j = x_j·x_i, so “i looks for j” would always equal “j looks for i”. Separate W_Q "
     "and W_K break both.",
     "没有投影时，每个词元与自身的得分就是它的范数平方，通常最大，所以它主要关注自己；而且 x_i·x_j = x_j·x_i，“i 找 "
     "j”永远等于“j 找 i”。独立的 W_Q 和 W_K 打破了这两点。"),
    ("lesson2.chart_asym", "Asymmetry ‖S − Sᵀ‖/‖S‖ of each head", "各头的非对称度 ‖S − Sᵀ‖/‖S‖"),
    ("lesson2.chart_tied", "Head {head}: weights before and after tying W_K := W_Q",
     "第 {head} 个头：令 W_K := W_Q 前后的权重"),
    ("lesson2.answer",
     "On this text, with XXᵀ the largest score of {xx_share} of the rows is on the diagonal: the token “only looks "
     "at itself”. With the learned QKᵀ that share is {qk_share} for head {head} ({qk_mean} on average over the "
     "layer's heads). {symmetry}: ‖S − Sᵀ‖/‖S‖ is {asym} for head {head} ({asym_min}–{asym_max} across heads; 0 "
     "would mean W_Q = W_K, “far” means at least {asym_far}). Tying W_K := W_Q for head {head} through the attention "
     "function moves each row "
     "by {tv} in total variation, changes the self-attending share to {tied_share} and the mean entropy from "
     "{entropy} to {tied_entropy} nats; the model's output changes by {change} ({measure}).",
     "在这段文本上，用 XXᵀ 时有 {xx_share} 的行最大得分落在对角线上：词元“只看自己”。用学到的 QKᵀ 时，第 {head} "
     "个头的这一比例是 {qk_share}（该层所有头平均为 {qk_mean}）。{symmetry}：第 {head} 个头的 ‖S − Sᵀ‖/‖S‖ 为 "
     "{asym}（各头在 {asym_min}–{asym_max} 之间；为 0 则意味着 W_Q = W_K，“远非对称”指至少 {asym_far}）。通过注意力函数"
     "令第 {head} 个头 W_K := "
     "W_Q 后，每行权重的总变差距离平均变化 {tv}，关注自身的比例变为 {tied_share}，平均熵从 {entropy} 变为 "
     "{tied_entropy} 奈特；模型输出变化 {change}（{measure}）。"),
    # Verdict terms of the lessons' answers (inspector.analyses.lessons.common: asymmetry_term, saturation_term,
    # uniformity_term; sinks.parking_term)
    ("lessons.asymmetry.far", "S is far from symmetric", "S 远非对称"),
    ("lessons.asymmetry.near", "S is not shown to be far from symmetric", "未能显示 S 远非对称"),
    ("lessons.scale.saturated", "saturated, almost no gradient", "已饱和，几乎没有梯度"),
    ("lessons.scale.not_saturated", "saturation not shown", "未能显示已饱和"),
    ("lessons.scale.uniform", "close to uniform, nothing stands out", "接近均匀分布，没有任何键突出"),
    ("lessons.scale.not_uniform", "closeness to uniform not shown", "未能显示接近均匀"),
    ("lessons.sink.parking", "a parking spot, not a source", "是停放处，不是来源"),
    ("lessons.sink.not_parking", "not shown to be a mere parking spot", "未能显示它只是停放处"),
    # Lesson 3 ---------------------------------------------------------------------------------------------------------
    ("lesson3.title", "3 · Where position enters", "3 · 位置信息从哪里进入"),
    ("lesson3.question", "Attention itself is order-blind — so where does word order come in?",
     "注意力本身不看顺序——那词序从哪里进入？"),
    ("lesson3.explain",
     "BERT and GPT-2 add a learned position vector to X before any layer, so Q, K and V all carry it; RoPE models "
     "(Llama, Mistral, Qwen2) rotate only Q and K by an angle proportional to the position, so the score depends on "
     "the offset i − j and V carries no position. Heads that put most weight at one offset are positional.",
     "BERT 和 GPT-2 在进入各层之前把学到的位置向量加到 X 上，所以 Q、K、V 都带有位置；RoPE 模型（Llama、Mistral、"
     "Qwen2）只把 Q 和 K 按与位置成正比的角度旋转，因此得分取决于偏移 i − j，而 V 不含位置。把大部分权重放在某个固定"
     "偏移上的头就是位置头。"),
    ("lesson3.chart", "Layer {layer}: mean weight by offset i − j", "第 {layer} 层：按偏移 i − j 的平均权重"),
    ("lesson3.answer.absolute",
     "This model adds learned absolute position embeddings to X, so every projection sees position. In layer "
     "{layer}, {count} {count|head puts|heads put} more than {threshold} of their weight on one offset, here and on "
     "a control text without repeats: {heads}. The most positional "
     "head is {top_head}, with {top_weight} at i − j = {top_offset}.",
     "这个模型把学到的绝对位置编码加到 X 上，因此每个投影都能看到位置。在第 {layer} 层，有 {count} 个头把超过 "
     "{threshold} 的权重放在同一个偏移上（本文本和没有重复的对照文本上都如此）：{heads}。位置性最强的是第 {top_head} "
     "个头，在 i − j = {top_offset} "
     "处权重为 {top_weight}。"),
    ("lesson3.answer.rope",
     "This model uses rotary embeddings (RoPE): position rotates Q and K only, so the scores depend on the offset i "
     "− j and V carries none. In layer {layer}, {count} {count|head puts|heads put} more than {threshold} of "
     "their weight on one offset, here and on a control text without repeats: {heads}. The most positional "
     "head is {top_head}, with {top_weight} at i − j = {top_offset}.",
     "这个模型使用旋转位置编码（RoPE）：位置只旋转 Q 和 K，因此得分取决于偏移 i − j，V 不带位置。在第 {layer} 层，有 "
     "{count} 个头把超过 {threshold} 的权重放在同一个偏移上（本文本和没有重复的对照文本上都如此）：{heads}。位置性最"
     "强的是第 {top_head} 个头，在 i − j = "
     "{top_offset} 处权重为 {top_weight}。"),
    ("lesson3.answer.relative",
     "This model uses relative position scores inside attention. In layer {layer}, {count} "
     "{count|head puts|heads put} more than {threshold} of their weight on one offset, here and on a control "
     "text without repeats: {heads}. The most positional head is {top_head}, with {top_weight} "
     "at i − j = {top_offset}.",
     "这个模型在注意力内部使用相对位置得分。在第 {layer} 层，有 {count} 个头把超过 {threshold} 的权重放在同一个偏移"
     "上：{heads}。位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 {top_weight}。"),
    ("lesson3.answer.unknown",
     "The inspector cannot tell how this model encodes position. In layer {layer}, {count} "
     "{count|head puts|heads put} more than {threshold} of their weight on one offset, here and on a control "
     "text without repeats: {heads}. The most positional head is {top_head}, with {top_weight} "
     "at i − j = {top_offset}.",
     "检查器无法判断这个模型如何编码位置。在第 {layer} 层，有 {count} 个头把超过 {threshold} "
     "的权重放在同一个偏移上（本文本和没有重复的对照文本上都如此）："
     "{heads}。位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 {top_weight}。"),
    ("lesson3.answer.absolute.none",
     "This model adds learned absolute position embeddings to X, so every projection sees position. In layer "
     "{layer}, no head puts more than {threshold} of its weight on one offset both here and on a control text "
     "without repeats. The most positional head is "
     "{top_head}, with {top_weight} at i − j = {top_offset}.",
     "这个模型把学到的绝对位置编码加到 X 上，因此每个投影都能看到位置。在第 {layer} 层，没有哪个头把超过 {threshold} "
     "的权重放在同一个偏移上（本文本和没有重复的对照文本上都如此）。位置性最强的是第 {top_head} 个头，在 i − j = "
     "{top_offset} 处权重为 {top_weight}。"),
    ("lesson3.answer.rope.none",
     "This model uses rotary embeddings (RoPE): position rotates Q and K only, so the scores depend on the offset i "
     "− j and V carries none. In layer {layer}, no head puts more than {threshold} of its weight on one offset both "
     "here and on a control text without repeats. The "
     "most positional head is {top_head}, with {top_weight} at i − j = {top_offset}.",
     "这个模型使用旋转位置编码（RoPE）：位置只旋转 Q 和 K，因此得分取决于偏移 i − j，V 不带位置。在第 {layer} 层，"
     "没有哪个头把超过 {threshold} 的权重放在同一个偏移上（本文本和没有重复的对照文本上都如此）。位置性最强的是第 "
     "{top_head} 个头，在 i − j = {top_offset} "
     "处权重为 {top_weight}。"),
    ("lesson3.answer.relative.none",
     "This model uses relative position scores inside attention. In layer {layer}, no head puts more than "
     "{threshold} of its weight on one offset both here and on a control text without repeats. The most positional "
     "head is {top_head}, with {top_weight} at i − j = "
     "{top_offset}.",
     "这个模型在注意力内部使用相对位置得分。在第 {layer} 层，没有哪个头把超过 {threshold} "
     "的权重放在同一个偏移上（本文本和没有重复的对照文本上都如此）。"
     "位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 {top_weight}。"),
    ("lesson3.answer.unknown.none",
     "The inspector cannot tell how this model encodes position. In layer {layer}, no head puts more than "
     "{threshold} of its weight on one offset both here and on a control text without repeats. The most positional "
     "head is {top_head}, with {top_weight} at i − j = "
     "{top_offset}.",
     "检查器无法判断这个模型如何编码位置。在第 {layer} 层，没有哪个头把超过 {threshold} "
     "的权重放在同一个偏移上（本文本和没有重复的对照文本上都如此）。"
     "位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 {top_weight}。"),
    ("lesson3.head_offset", "{head} (i−j = {offset}: {weight})", "{head}（i−j = {offset}：{weight}）"),
    ("lesson3.head_offset_control", "{head} (i−j = {offset}: {weight} → {control})",
     "{head}（i−j = {offset}：{weight} → {control}）"),
    ("lesson3.control.holds",
     "Checked on a control text (the same length, every token replaced by a different random token, so nothing "
     "repeats): each head past {threshold} on this text keeps its offset there — head (offset: weight here → on the "
     "control): {heads}. They follow the position, not the content.",
     "已用对照文本检验（长度相同，每个词元换成互不相同的随机词元，因此没有任何重复）：在本文本上超过 {threshold} 的头在"
     "对照文本上仍保持同一偏移——头（偏移：此处权重 → 对照文本权重）：{heads}。它们跟随位置，而不是内容。"),
    ("lesson3.control.induction",
     "Not positional: {following}. On this text they put more than {threshold} on one offset, but on a control text "
     "of the same length without repeats they do not — head (offset: weight here → on the control): {heads}. The "
     "text repeats a span, and these heads follow the repeat (induction: attend to the token after the earlier "
     "copy), so their offset is the repeat's length, not a rule about position.",
     "不是位置头：{following}。它们在本文本上把超过 {threshold} 的权重放在同一个偏移上，但在长度相同、没有重复的对照"
     "文本上不是——头（偏移：此处权重 → 对照文本权重）：{heads}。这段文本重复了一段内容，这些头跟随重复（归纳头：关注"
     "前一次出现之后的那个词元），所以它们的偏移是重复的长度，而不是位置规则。"),
    ("lesson3.control.content",
     "Not positional: {following}. On this text they put more than {threshold} on one offset, but on a control text "
     "of the same length with random tokens they do not — head (offset: weight here → on the control): {heads}. "
     "What they look at depends on the tokens, not on the distance.",
     "不是位置头：{following}。它们在本文本上把超过 {threshold} 的权重放在同一个偏移上，但在长度相同的随机词元对照文本"
     "上不是——头（偏移：此处权重 → 对照文本权重）：{heads}。它们关注什么取决于词元本身，而不是距离。"),
    # Lesson 4 ---------------------------------------------------------------------------------------------------------
    ("lesson4.title", "4 · Why √d_k, and why not d_k", "4 · 为什么除以 √d_k，而不是 d_k"),
    ("lesson4.question", "Which d is in √d, and what goes wrong with no scaling or with 1/d?",
     "√d 里的 d 是哪个？不缩放或除以 d 会出什么问题？"),
    ("lesson4.explain",
     "d is d_k, the size of one head's query and key. For entries of variance 1, q·k sums d_k products, so its "
     "variance is d_k: unscaled scores grow with d_k and the softmax saturates (one-hot, gradient ≈ 0). Dividing by "
     "√d_k keeps the variance at 1; dividing by d_k shrinks it to 1/d_k and the weights go uniform.",
     "d 就是 d_k，即单个头的查询和键的维度。若各分量方差为 1，q·k 是 d_k 个乘积之和，方差就是 d_k：不缩放时得分随 "
     "d_k 增大，softmax 饱和（接近独热，梯度≈0）。除以 √d_k 使方差保持为 1；除以 d_k 则缩小到 1/d_k，权重趋于均匀。"),
    ("lesson4.variance_chart", "Simulation: variance of q·k vs d (log–log)", "模拟：q·k 方差随 d 的变化（双对数）"),
    ("lesson4.sweep_chart", "Simulation: mean entropy vs d under each scale", "模拟：各缩放下平均熵随 d 的变化"),
    ("lesson4.table_scale", "scale", "缩放"),
    ("lesson4.table_variance", "Var(q·k)", "Var(q·k)"),
    ("lesson4.table_entropy_nats", "entropy (nats)", "熵（奈特）"),
    ("lesson4.table_max", "mean max weight", "平均最大权重"),
    ("lesson4.table_jacobian", "‖J‖_F (softmax Jacobian)", "‖J‖_F（softmax 雅可比）"),
    ("lesson4.jacobian_help",
     "The Frobenius norm of the softmax's Jacobian: how much the weights still move when the scores do (near 0: "
     "saturated, almost no gradient).",
     "softmax 雅可比矩阵的 Frobenius 范数：得分变化时权重还能变化多少（接近 0：已饱和，几乎没有梯度）。"),
    ("lesson4.table_entropy", "normalised entropy", "归一化熵"),
    ("lesson4.table_change", "output change", "输出变化"),
    ("lesson4a.answer",
     "Simulation: the variance of q·k grows with slope {slope} on a log–log plot (≈ d; {var_max} at d = {d_max}). At "
     "d = {d_max}, unscaled scores give entropy {h1} nats — {n1} of the uniform log {keys} = {uniform} — max weight "
     "{m1} and a softmax Jacobian norm of {j1}: {saturation} (saturated means below {collapsed} of the uniform "
     "entropy). With 1/√d the entropy stays between {h2_min} and {h2_max} nats at every d (at d = {d_max}: entropy "
     "{h2}, max weight {m2}, Jacobian norm {j2}). With 1/d the entropy is {h3} nats — {n3} of the uniform — and the "
     "max weight {m3}: {uniformity} (close to uniform means above {diffuse} of it).",
     "模拟：q·k 的方差在双对数坐标下以斜率 {slope} 增长（≈ d；d = {d_max} 时为 {var_max}）。在 d = {d_max} 时，"
     "不缩放的得分给出熵 {h1} 奈特——是均匀分布 log {keys} = {uniform} 的 {n1}——最大权重 {m1}、softmax 雅可比范数 "
     "{j1}：{saturation}（饱和指低于均匀熵的 {collapsed}）。用 1/√d 时熵在各个 d 下都保持在 {h2_min} 到 {h2_max} "
     "奈特之间（d = {d_max} 时熵 {h2}、最大权重 {m2}，雅可比范数 {j2}）。用 1/d 时熵为 {h3} 奈特——是均匀熵的 "
     "{n3}——最大权重 {m3}：{uniformity}（接近均匀指高于均匀熵的 {diffuse}）。"),
    ("lesson4b.answer",
     "On the real layer {layer}, head {head} (d_k = {d_k}, the model's own scale {own}): without scaling the "
     "normalised entropy is {h1} (mean max weight {m1}) and the model's output changes by {c1} ({measure}); with its "
     "own scale it is {h2} (max weight {m2}); with 1/d_k it is {h3} (max weight {m3}) — {uniformity} (close to "
     "uniform means above {diffuse}) — and the output changes by {c3}.",
     "在真实的第 {layer} 层第 {head} 个头上（d_k = {d_k}，模型自身的缩放为 {own}）：不缩放时归一化熵为 {h1}（平均"
     "最大权重 {m1}），模型输出变化 {c1}（{measure}）；用模型自身的缩放时为 {h2}（最大权重 {m2}）；用 1/d_k 时为 "
     "{h3}（最大权重 {m3}）——{uniformity}（接近均匀指高于 {diffuse}）——输出变化 {c3}。"),
    # Lesson 5 ---------------------------------------------------------------------------------------------------------
    ("lesson5.title", "5 · What multi-head splits", "5 · 多头到底拆分了什么"),
    ("lesson5.question", "What does “multi-head” split, and what does each head end up doing?",
     "“多头”拆分的是什么？每个头最后在做什么？"),
    ("lesson5.explain",
     "The projection to d_model is reshaped into heads × d_k: each head gets its own small Q, K, V and its own "
     "softmax, so one layer can route several ways at once. S = QKᵀ of one head has rank at most d_k; A = softmax(S) "
     "is not bounded that way, because the softmax is not linear.",
     "投影到 d_model 的结果被重排成 头数 × d_k：每个头有自己的小 Q、K、V 和自己的 softmax，因此一层可以同时按几种方式"
     "路由。单个头的 S = QKᵀ 秩至多为 d_k；A = softmax(S) 不受此约束，因为 softmax 不是线性的。"),
    ("lesson5.step.split", "split", "拆分成多头"),
    ("lesson5.step.concat", "concat · W_O", "拼接 · W_O"),
    ("lesson5.col_step", "step", "步骤"),
    ("lesson5.col_shape", "shape", "形状"),
    ("lesson5.role.offset", "offset", "偏移"),
    ("lesson5.role.special", "special token", "特殊词元"),
    ("lesson5.role.content", "content", "内容"),
    ("lesson5.chart", "Layer {layer}: each head's contribution norm after W_O",
     "第 {layer} 层：各头经 W_O 后的贡献范数"),
    ("lesson5.answer",
     "Layer {layer} splits d_model = {d_model} into {heads} heads × d_k = {d_k}. On these {n} tokens each head's S = "
     "QKᵀ has effective rank {erank_min}–{erank_max} and numerical rank at most {rank_max}, never above min(n, d_k) "
     "= {bound}; A = softmax(S) reaches effective rank {erank_a_max}. After W_O, head {top_head} writes the most "
     "into the residual stream ({top_share} of the layer's total norm). Specialisation: {offset} "
     "{offset|head follows|heads follow} an offset (more than {offset_min} of the weight on one), {special} look "
     "mostly at special tokens (more than {special_min} on them), {content} route by content.",
     "第 {layer} 层把 d_model = {d_model} 拆成 {heads} 个头 × d_k = {d_k}。在这 {n} 个词元上，每个头的 S = QKᵀ "
     "有效秩为 {erank_min}–{erank_max}，数值秩至多 {rank_max}，从不超过 min(n, d_k) = {bound}；A = softmax(S) "
     "的有效秩可达 {erank_a_max}。经过 W_O 后，第 {top_head} 个头写入残差流的最多（占该层总范数的 {top_share}）。"
     "分工：{offset} 个头跟随固定偏移（在某个偏移上的权重超过 {offset_min}），{special} 个头主要看特殊词元（超过 "
     "{special_min}），{content} 个头按内容路由。"),
    # Lesson 6 ---------------------------------------------------------------------------------------------------------
    ("lesson6.title", "6 · Entropy as a diagnostic", "6 · 用熵做诊断"),
    ("lesson6.question", "What does attention entropy tell you about a model, layer by layer?",
     "注意力熵逐层能告诉你模型的什么？"),
    ("lesson6.explain",
     "Normalised entropy (entropy / log of the visible keys) is 0 when a row puts everything on one key and 1 when "
     "it is uniform. Clark et al. (2019) found BERT's early layers broad and later ones sharper; a head stuck near 0 "
     "(collapsed) or near 1 (diffuse) is worth a look.",
     "归一化熵（熵 / log 可见键数）在一行把全部权重放在一个键上时为 0，均匀时为 1。Clark 等人（2019）发现 BERT "
     "浅层注意力宽、深层更尖锐；熵接近 0（坍缩）或接近 1（弥散）的头值得查看。"),
    # The verdict is a one-sided Spearman test of "entropy falls with depth" at α = {alpha}
    # (inspector.analyses.lessons.encoder.depth_trend): holds, its opposite shown, or not shown.
    ("lesson6.answer.holds",
     "“Shallow broad, deep sharp” holds here: the first half of the {layers} layers averages {shallow} normalised "
     "entropy, the second half {deep}, and entropy falls with depth by a one-sided Spearman test (ρ = {rho}, "
     "p = {p} < {alpha}). Alarms: {collapsed} of {heads} heads {collapsed|is|are} collapsed (< {low}: "
     "{collapsed_list}) and {diffuse} diffuse (> {high}: {diffuse_list}).",
     "“浅层宽、深层尖”在这里成立：{layers} 层中前一半的平均归一化熵为 {shallow}，后一半为 {deep}，单侧 Spearman "
     "检验显示熵随深度下降（ρ = {rho}，p = {p} < {alpha}）。警报：{heads} 个头中有 {collapsed} 个坍缩（< {low}："
     "{collapsed_list}），{diffuse} 个弥散（> {high}：{diffuse_list}）。"),
    ("lesson6.answer.fails",
     "“Shallow broad, deep sharp” does not hold here — the opposite does: the first half of the {layers} layers "
     "averages {shallow} normalised entropy, the second half {deep}, and entropy rises with depth by a one-sided "
     "Spearman test (ρ = {rho}, p = {p_opposite} < {alpha}). Alarms: {collapsed} of {heads} heads "
     "{collapsed|is|are} collapsed (< {low}: {collapsed_list}) and {diffuse} diffuse (> {high}: {diffuse_list}).",
     "“浅层宽、深层尖”在这里不成立，反而相反：{layers} 层中前一半的平均归一化熵为 {shallow}，后一半为 {deep}，单侧 "
     "Spearman 检验显示熵随深度上升（ρ = {rho}，p = {p_opposite} < {alpha}）。警报：{heads} 个头中有 {collapsed} "
     "个坍缩（< {low}：{collapsed_list}），{diffuse} 个弥散（> {high}：{diffuse_list}）。"),
    ("lesson6.answer.not_shown",
     "“Shallow broad, deep sharp” is not shown here: the first half of the {layers} layers averages {shallow} "
     "normalised entropy, the second half {deep}, but a one-sided Spearman test of entropy falling with depth gives "
     "ρ = {rho}, p = {p} — not below {alpha}, so the difference is within what a random order of the layers gives. "
     "Alarms: {collapsed} of {heads} heads {collapsed|is|are} collapsed (< {low}: {collapsed_list}) and {diffuse} "
     "diffuse (> {high}: {diffuse_list}).",
     "这里未能显示“浅层宽、深层尖”：{layers} 层中前一半的平均归一化熵为 {shallow}，后一半为 {deep}，但检验熵随深度"
     "下降的单侧 Spearman 检验给出 ρ = {rho}，p = {p}——不低于 {alpha}，这点差别在各层随机排列时也会出现。警报："
     "{heads} 个头中有 {collapsed} 个坍缩（< {low}：{collapsed_list}），{diffuse} 个弥散（> {high}："
     "{diffuse_list}）。"),
    # Lesson 7 ---------------------------------------------------------------------------------------------------------
    ("lesson7.title", "7 · Why O(n²) matters, and what FlashAttention changes",
     "7 · 为什么 O(n²) 很重要，FlashAttention 改变了什么"),
    ("lesson7.question", "How do time and memory grow with the text length, and what does the flash path save?",
     "时间和内存如何随文本长度增长？flash 路径省下了什么？"),
    ("lesson7.explain",
     "Materialised attention writes the whole n × n score and weight matrices; FlashAttention (Dao et al. 2022) "
     "streams keys in tiles with an online softmax, so the n × n matrix never exists in memory. The arithmetic is "
     "still O(n²): what changes is memory and memory traffic.",
     "显式计算的注意力会写出完整的 n × n 得分和权重矩阵；FlashAttention（Dao 等，2022）按块流式读取键并使用在线 "
     "softmax，n × n 矩阵从不存在于内存中。计算量仍是 O(n²)：改变的是内存占用和内存读写量。"),
    ("lesson7.recompute",
     "Recomputation: for training, the backward pass needs the weights again. Materialised attention stores all n × n "
     "of them; FlashAttention stores only two numbers per query row — the row's maximum and sum, folded into its "
     "log-sum-exp — and recomputes each tile of weights from Q, K and those row statistics when the backward reaches "
     "it. The trade: it does more arithmetic (the scores are computed twice) to move far fewer bytes, because on a "
     "GPU reading and writing an n × n matrix in slow memory costs more time than recomputing it in fast on-chip "
     "memory. Compute is cheap, bandwidth is not.",
     "重计算：训练时反向传播还需要这些权重。显式计算的注意力把 n × n 个权重全部存下来；FlashAttention "
     "每个查询行只存两个数——这一行的最大值和总和，合并为它的 log-sum-exp——反向传播到某一块时，再用 Q、K 和这些行统计量"
     "重新算出这一块的权重。这是一笔交换：多做一些计算（得分算两遍），换来少搬很多字节，因为在 GPU 上把 n × n "
     "矩阵写进慢速显存再读出来，比在快速的片上存储里重新计算更费时间。算力便宜，带宽昂贵。"),
    ("lesson7.not_measured", "not measured on {device}", "{device} 上未测量"),
    ("lesson7.lengths", "Lengths n", "长度 n"),
    ("lesson7.lengths_placeholder", "Choose lengths…", "选择长度…"),
    ("lesson7.run", "Measure on this device", "在本设备上测量"),
    ("lesson7.measuring", "Timing attention: round {round} of {rounds} over every length (the first {warmups} not "
     "counted)…",
     "正在测量注意力耗时：第 {round} 轮，共 {rounds} 轮，每轮测所有长度（前 {warmups} 轮为预热，不计入）…"),
    ("lesson7.chart", "Time vs n on {device} (log–log)", "{device} 上耗时随 n 的变化（双对数）"),
    ("lesson7.growth_chart", "Growth with n: counted vs timed", "随 n 的增长：计数与计时"),
    ("lesson7.col_mat_ms", "materialised, ms", "显式计算，毫秒"),
    ("lesson7.col_flash_ms", "flash, ms", "flash，毫秒"),
    ("lesson7.col_mat_theory", "materialised, MiB (theory)", "显式计算，MiB（理论）"),
    ("lesson7.col_flash_theory", "flash, MiB (theory)", "flash，MiB（理论）"),
    ("lesson7.col_mat_measured", "materialised, MiB (measured)", "显式计算，MiB（实测）"),
    ("lesson7.col_flash_measured", "flash, MiB (measured)", "flash，MiB（实测）"),
    ("lesson7.memory_note",
     "Bytes: theoretical extra memory of each path. Measured peaks come from CUDA's allocator; on a CPU PyTorch "
     "reports no peak, so only the theoretical column is shown.",
     "字节数：每条路径理论上额外占用的内存。实测峰值来自 CUDA 分配器；在 CPU 上 PyTorch 不报告峰值，因此只显示理论"
     "值。"),
    ("lesson7.col_weight_bytes", "n × n weights, MiB (allocated)", "n × n 权重，MiB（实际分配）"),
    ("lesson7.col_gflops", "QKᵀ + AV, GFLOP (counted)", "QKᵀ + AV，GFLOP（计数）"),
    ("lesson7.col_delta", "max |Δ| flash vs materialised", "max |Δ|：flash 与显式计算之差"),
    ("lesson7.counted",
     "Counted, not timed — these hold on any machine, busy or not: at n = {n} the materialised path allocated "
     "{weights_mb} MiB for the n × n weights of {heads} heads, and QKᵀ and AV cost {gflops} GFLOP (2·n²·d_k each, per "
     "head, d_k = {d_k}). Both grow as n^{bytes_exponent} and n^{flops_exponent} over these lengths: that is O(n²). "
     "The flash path ({backend}) computed the same output: max |Δ| = {delta} against the materialised output "
     "({dtype}), measured just now.",
     "这些是计数而非计时——无论机器忙不忙都成立：n = {n} 时，显式计算路径为 {heads} 个头的 n × n 权重分配了 "
     "{weights_mb} MiB，QKᵀ 和 AV 共需 {gflops} GFLOP（每个头各 2·n²·d_k，d_k = {d_k}）。在这些长度上两者分别按 "
     "n^{bytes_exponent} 和 n^{flops_exponent} 增长：这就是 O(n²)。flash 路径（{backend}）"
     "算出了同样的输出：与显式计算的输出相比 max |Δ| = {delta}（{dtype}），刚刚实测。"),
    ("lesson7.answer",
     "Measured just now on {device} with {heads} heads of d_k = {d_k}, the median of {repeats} runs per length after "
     "{warmups} warm-up rounds: at n = {n} the materialised path took {mat_ms} ms and needs {mat_mb} MiB for the "
     "n × n scores and weights; the flash path ({backend}) took {flash_ms} ms with {flash_mb} MiB beyond Q, K, V and "
     "O. Materialised time grew as n^{exponent} over these lengths (95% interval {low}–{high} over the runs; the runs "
     "of one length spread by at most {spread}, within the {busy} past which the timings are not trusted). Small n is "
     "dominated by fixed costs, so the exponent reaches 2 only at longer lengths.",
     "刚刚在 {device} 上用 {heads} 个 d_k = {d_k} 的头测得，先预热 {warmups} 轮，再对每个长度取 {repeats} "
     "次运行的中位数：n = {n} 时显式计算路径耗时 {mat_ms} 毫秒，n × n 得分和权重需要 {mat_mb} MiB；flash 路径"
     "（{backend}）耗时 {flash_ms} 毫秒，除 Q、K、V、O 外只需 {flash_mb} MiB。在这些长度上显式计算路径的耗时按 "
     "n^{exponent} 增长（按各次运行得到的 95% 区间为 {low}–{high}；同一长度各次运行的离散度最多 {spread}，"
     "未超过计时不可信的界限 {busy}）。n 较小时固定开销占主导，所以只有在更长的长度上指数才接近 2。"),
    ("lesson7.answer.flat",
     "The clock did not show the square growth at these lengths: materialised time grew only as n^{exponent} (95% "
     "interval {low}–{high}, below {threshold}), the median of {repeats} runs per length after {warmups} warm-up "
     "rounds on {device}. Fixed costs (calls, allocation, threads) dominate small n; the counted bytes and FLOPs "
     "above are the evidence for O(n²) here. For what they are worth: at n = {n} the materialised path took {mat_ms} "
     "ms and the flash path ({backend}) {flash_ms} ms. Add longer lengths (2048, 4096) to see the clock follow.",
     "在这些长度上计时没有显示出平方增长：显式计算的耗时只按 n^{exponent} 增长（95% 区间 {low}–{high}，低于 "
     "{threshold}），这是在 {device} 上预热 {warmups} 轮后每个长度 {repeats} 次运行的中位数。n 较小时固定开销（调用、"
     "分配内存、线程）占主导；这里 O(n²) 的证据是上面计数得到的字节数和 FLOPs。仅供参考：n = {n} 时显式计算路径耗时 "
     "{mat_ms} 毫秒，flash 路径（{backend}）耗时 {flash_ms} 毫秒。加入更长的长度（2048、4096）可以看到计时跟上。"),
    ("lesson7.answer.busy",
     "The machine was too busy to trust these timings, so they show nothing about the growth: the runs of one length "
     "spread by up to {spread}, more than {busy} (median of {repeats} runs per length after {warmups} warm-up rounds "
     "on {device}). For what they are worth: at n = {n} the materialised path took {mat_ms} ms ({mat_mb} MiB for the "
     "n × n scores and weights) and the flash path ({backend}) {flash_ms} ms ({flash_mb} MiB); the fitted exponent "
     "n^{exponent} has a 95% interval of {low}–{high}. The counted bytes and FLOPs above show O(n²) regardless; "
     "measure again when the machine is idle to see the clock agree.",
     "机器太忙，这些计时不可信，不能说明增长规律：同一长度各次运行的离散度高达 {spread}，超过 {busy}"
     "（在 {device} 上预热 {warmups} 轮后每个长度取 {repeats} 次运行的中位数）。仅供参考：n = {n} 时显式计算路径"
     "耗时 {mat_ms} 毫秒（n × n 得分和权重需 {mat_mb} MiB），flash 路径（{backend}）耗时 {flash_ms} 毫秒"
     "（{flash_mb} MiB）；拟合指数 n^{exponent} 的 95% 区间为 {low}–{high}。上面计数得到的字节数和 FLOPs "
     "无论如何都显示 O(n²)；请在机器空闲时重新测量，看计时是否一致。"),
    # Lesson 18 (issue 44, item 11; drawn after lesson 4) ----------------------------------------------------------
    ("lesson18.title", "18 · A head dimension that is too small hurts", "18 · 头的维度太小会有损失"),
    ("lesson18.question", "What does a small d_k cost — and how many dimensions does a real head use?",
     "d_k 太小会损失什么？一个真实的头实际用了多少维？"),
    ("lesson18.explain",
     "A head's scores are S = QKᵀ with Q and K of n × d_k, so S has rank at most d_k: with d_k < n some attention "
     "patterns cannot be written at all (Bhojanapalli et al. 2020, the low-rank bottleneck). Left: a simulation. "
     "Right: the chosen head, its scores cut to their r strongest directions.",
     "一个头的得分是 S = QKᵀ，其中 Q、K 都是 n × d_k，所以 S 的秩至多为 d_k：d_k < n 时，有些注意力模式根本写不出来"
     "（Bhojanapalli 等，2020，低秩瓶颈）。左图是模拟；右图是所选的头，把它的得分截断到最强的 r 个方向。"),
    ("lesson18.limits",
     "Simulation (seeded, not the model): {keys} random dense target rows over {keys} keys (Dirichlet(1)), Q and K "
     "fitted by {steps} Adam steps for each d_k, seed {seed}. Its limits: random targets are harder than the patterns "
     "a trained head learns, and the optimiser's best is an upper bound on the true minimum. On the right, cutting a "
     "trained head is not training a smaller one: a head trained with d_k = r could do better.",
     "模拟（固定随机种子，不是模型）：{keys} 个键上的 {keys} 行随机稠密目标（Dirichlet(1)），对每个 d_k 用 {steps} "
     "步 Adam 拟合 Q 和 K，种子 {seed}。它的局限：随机目标比训练出来的头学到的模式更难，优化器找到的最优值只是真实"
     "最小值的上界。右图中，截断一个训练好的头并不等于训练一个更小的头：用 d_k = r 训练出来的头可能做得更好。"),
    ("lesson18.sim_chart", "Simulation: best KL vs d_k", "模拟：最小 KL 随 d_k 变化"),
    ("lesson18.head_chart", "Layer {layer}, head {head}: KL vs rank kept",
     "第 {layer} 层第 {head} 个头：KL 随保留的秩 r 变化"),
    ("lesson18.answer",
     "Simulation: fitting random dense patterns over {keys} keys, the best mean KL was {low_kl} nats with "
     "d_k = {low_d}, {mid_kl} with d_k = {mid_d} and {high_kl} with d_k = {high_d} = n — a head narrower than the "
     "text cannot write every pattern. On this text ({n} tokens), layer {layer}, head {head} has d_k = {d_k}: cut to "
     "its strongest direction its weights are {one_kl} nats away from the real ones, and {needed} directions bring "
     "them below {threshold} nats. Its pattern here uses about {needed} of its {d_k} dimensions.",
     "模拟：在 {keys} 个键上拟合随机稠密模式，d_k = {low_d} 时最小平均 KL 为 {low_kl} 奈特，d_k = {mid_d} 时为 "
     "{mid_kl}，d_k = {high_d} = n 时为 {high_kl}——比文本更窄的头写不出所有模式。在这段文本上（{n} 个词元），第 "
     "{layer} 层第 {head} 个头的 d_k = {d_k}：只保留最强的一个方向时，它的权重与真实权重相差 {one_kl} 奈特，保留 "
     "{needed} 个方向就降到 {threshold} 奈特以下。它在这里的模式大约用了 {d_k} 维中的 {needed} 维。"),
    ("lesson18.answer.all",
     "Simulation: fitting random dense patterns over {keys} keys, the best mean KL was {low_kl} nats with "
     "d_k = {low_d}, {mid_kl} with d_k = {mid_d} and {high_kl} with d_k = {high_d} = n — a head narrower than the "
     "text cannot write every pattern. On this text ({n} tokens), layer {layer}, head {head} has d_k = {d_k}: cut to "
     "its strongest direction its weights are {one_kl} nats away from the real ones, and no cut below its full size "
     "brings them under {threshold} nats: its pattern here uses every dimension it has.",
     "模拟：在 {keys} 个键上拟合随机稠密模式，d_k = {low_d} 时最小平均 KL 为 {low_kl} 奈特，d_k = {mid_d} 时为 "
     "{mid_kl}，d_k = {high_d} = n 时为 {high_kl}——比文本更窄的头写不出所有模式。在这段文本上（{n} 个词元），第 "
     "{layer} 层第 {head} 个头的 d_k = {d_k}：只保留最强的一个方向时，它的权重与真实权重相差 {one_kl} 奈特，"
     "任何小于完整维度的截断都不能降到 {threshold} 奈特以下：它在这里的模式用上了所有维度。"),
    # Lesson 19 (issue 44, item 11; drawn after lesson 3) ----------------------------------------------------------
    ("lesson19.title", "19 · Sinusoidal, learned and rotary positions, side by side",
     "19 · 正弦、学习式与旋转位置编码的对比"),
    ("lesson19.question", "How similar are the codes of two positions, as a function of their distance?",
     "两个位置的编码有多相似？这与它们的距离有什么关系？"),
    ("lesson19.explain",
     "The sinusoidal formula PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(p / 10000^(2i/d)) applied live at "
     "this model's width, the model's own learned position table if it has one, and RoPE rotating one fixed vector "
     "to each position. The chart shows cos(code(p), code(p + Δ)) averaged over p; the table its spread over p.",
     "现场按本模型的宽度套用正弦公式 PE(p, 2i) = sin(p / 10000^(2i/d))、PE(p, 2i+1) = cos(p / 10000^(2i/d))，"
     "再加上模型自己学到的位置表（如果有的话），以及用 RoPE 把同一个固定向量旋转到各个位置。"
     "图中是对 p 取平均的 cos(code(p), code(p + Δ))；表中是它随 p 的离散程度。"),
    ("lesson19.chart", "Similarity of position codes vs offset Δ", "位置编码的相似度随偏移 Δ 的变化"),
    ("lesson19.col_code", "code", "编码"),
    ("lesson19.col_near", "cos at Δ = 1", "Δ = 1 时的 cos"),
    ("lesson19.col_far", "cos at Δ = {far}", "Δ = {far} 时的 cos"),
    ("lesson19.col_spread", "spread over p (mean over Δ)", "随 p 的离散度（对 Δ 取平均）"),
    ("lesson19.code.sinusoidal", "sinusoidal (formula, d = {d})", "正弦（公式，d = {d}）"),
    ("lesson19.code.learned", "learned (this model's table)", "学习式（本模型的位置表）"),
    ("lesson19.code.rope", "RoPE (rotation, d_k = {d})", "RoPE（旋转，d_k = {d}）"),
    ("lesson19.rope_source.model", "this model's own rotary frequencies", "本模型自己的旋转频率"),
    ("lesson19.rope_source.formula", "base 10000 at this model's head size, as RoPE would",
     "按本模型的头维度、以 10000 为底，如同 RoPE"),
    ("lesson19.answer",
     "Sinusoidal codes at d = {d_model}: neighbours (Δ = {offset}) have cosine {sin_near}, positions {far} apart "
     "{sin_far}. RoPE at d_k = {rope_dim} ({rope_source}): {rope_near} and {rope_far}. For both formulas the "
     "similarity depends on the offset alone: its spread over absolute positions is at most {formula_spread}, below "
     "{threshold} (rounding). {model}'s learned table gives {learned_near} and {learned_far}, with a spread of "
     "{learned_spread} over positions: {learned_verdict}.",
     "d = {d_model} 的正弦编码：相邻位置（Δ = {offset}）的余弦为 {sin_near}，相距 {far} 的位置为 {sin_far}。"
     "d_k = {rope_dim} 的 RoPE（{rope_source}）：{rope_near} 和 {rope_far}。两个公式的相似度都只取决于偏移："
     "随绝对位置的离散度至多 {formula_spread}，低于 {threshold}（舍入误差）。{model} 学到的位置表给出 "
     "{learned_near} 和 {learned_far}，随位置的离散度为 {learned_spread}：{learned_verdict}。"),
    ("lesson19.learned.not_relative", "learned freely, it is not a function of the offset alone",
     "它是自由学到的，不只是偏移的函数"),
    ("lesson19.learned.relative", "below the same threshold, so here it acts as a function of the offset alone",
     "低于同一阈值，所以在这里它表现得只是偏移的函数"),
    ("lesson19.answer.no_table",
     "Sinusoidal codes at d = {d_model}: neighbours (Δ = {offset}) have cosine {sin_near}, positions {far} apart "
     "{sin_far}. RoPE at d_k = {rope_dim} ({rope_source}): {rope_near} and {rope_far}. For both formulas the "
     "similarity depends on the offset alone: its spread over absolute positions is at most {formula_spread}, below "
     "{threshold} (rounding). {model} has no learned position table; pick MiniLM in the sidebar to see one beside "
     "them.",
     "d = {d_model} 的正弦编码：相邻位置（Δ = {offset}）的余弦为 {sin_near}，相距 {far} 的位置为 {sin_far}。"
     "d_k = {rope_dim} 的 RoPE（{rope_source}）：{rope_near} 和 {rope_far}。两个公式的相似度都只取决于偏移："
     "随绝对位置的离散度至多 {formula_spread}，低于 {threshold}（舍入误差）。{model} 没有学到的位置表；"
     "在侧边栏选择 MiniLM 即可把它放在旁边对比。"),
    ("lesson1.products",
     "Each score is a sum over the d_k dimensions: S_ij = scale · Σ_d q_i,d · k_j,d. The Mechanism page draws those "
     "per-dimension products q_d · k_d for one cell of the sidebar's layer and head (its section 3, “Why this head "
     "attends here”), bertviz's neuron view.",
     "每个得分都是 d_k 个维度上的求和：S_ij = scale · Σ_d q_i,d · k_j,d。机制页面为侧边栏所选层和头的一个格子"
     "画出这些逐维乘积 q_d · k_d（第 3 部分“这个头为什么看向这里”），即 bertviz 的神经元视图。"),
    ("lesson1.products_link", "Per-dimension products on the Mechanism page", "在机制页面查看逐维乘积"),
    # Lesson 8 ---------------------------------------------------------------------------------------------------------
    ("lesson8.title", "8 · Quiz", "8 · 小测验"),
    ("lesson8.explain", "Commit to a guess, then reveal the measurement. Your score is kept for this session.",
     "先做出猜测，再揭晓实测结果。本次会话会记录你的得分。"),
    ("lesson8.query", "Query token", "查询词元"),
    ("lesson8.attention_q", "From query token “{query}”, which token will head {head} of layer {layer} attend to most?",
     "从查询词元“{query}”出发，第 {layer} 层第 {head} 个头最关注哪个词元？"),
    ("lesson8.right", "Right: “{key}” gets {weight} of the budget.", "答对了：“{key}”获得了 {weight} 的预算。"),
    ("lesson8.wrong", "Not quite: the head sends {weight} to “{key}”; your guess “{guess}” got {guessed}.",
     "不对：该头把 {weight} 给了“{key}”；你猜的“{guess}”只得到 {guessed}。"),
    ("lesson8.guess", "Your guess", "你的猜测"),
    ("lesson8.guess_placeholder", "Choose a token…", "选择一个词元…"),
    ("lesson8.reveal", "Reveal", "揭晓"),
    ("lesson8.locked", "Answered: the guess is locked and counted once. Pick another query token for a new question.",
     "已作答：猜测已锁定，只计一次分。换一个查询词元即可开始新的一题。"),
    ("lesson8.importance_q", "Which token matters most for the model's output (delete it and see)?",
     "哪个词元对模型输出最重要（删掉它看看）？"),
    ("lesson8.computing", "Deleting each token in turn…", "正在依次删除每个词元…"),
    ("lesson8.importance_right", "Right: deleting “{token}” changes the output most ({change}).",
     "答对了：删掉“{token}”时输出变化最大（{change}）。"),
    ("lesson8.importance_wrong",
     "Not quite: deleting “{token}” changes the output most ({change}); deleting “{guess}” changes it by {guessed}.",
     "不对：删掉“{token}”时输出变化最大（{change}）；删掉“{guess}”时变化为 {guessed}。"),
    ("lesson8.importance_locked", "Answered for this text: the guess is locked and counted once.",
     "这段文本已作答：猜测已锁定，只计一次分。"),
    ("lesson8.score", "Score this session: {right} of {asked}", "本次得分：共 {asked} 题，答对 {right} 题"),
    # Errors of the lessons' inputs (inspector.analyses.lessons: sinks, timing) --------------------------------------
    ("lessons.error.text_too_short", "This lesson needs a text of at least {tokens} tokens; type a longer text.",
     "这节课需要至少 {tokens} 个词元的文本；请输入更长的文本。"),
    ("lessons.error.query", "Query position {query} is outside the text's {tokens} tokens; pick another token.",
     "查询位置 {query} 超出了文本的 {tokens} 个词元；请选另一个词元。"),
    ("lessons.error.nothing_to_leave_out", "The text has no token that can be left out (only special tokens); type a "
     "longer text.", "这段文本没有可以删去的词元（只有特殊词元）；请输入更长的文本。"),
    # Chart words every lesson's charts share (inspector.charts.lessons) -----------------------------------------------
    ("chart.lessons.blocked", "blocked PyTorch (query blocks)", "分块 PyTorch（按查询分块）"),
    ("chart.lessons.key", "key", "键"),
    ("chart.lessons.weight", "weight", "权重"),
    ("chart.lessons.keys", "keys", "键的投影"),
    ("chart.lessons.asymmetry", "asymmetry", "非对称度"),
    ("chart.lessons.mean_weight", "mean weight", "平均权重"),
    ("chart.lessons.offset", "offset", "偏移"),
    ("chart.lessons.entropy", "entropy", "熵"),
    ("chart.lessons.max_weight", "max weight", "最大权重"),
    ("chart.lessons.variance", "variance", "方差"),
    ("chart.lessons.role", "role", "分工"),
    ("chart.lessons.norm", "norm", "范数"),
    ("chart.lessons.share", "share", "占比"),
    ("chart.lessons.rank", "rank(S)", "S 的秩"),
    ("chart.lessons.effective_rank", "erank(S)", "S 的有效秩"),
    ("chart.lessons.materialised", "materialised n×n", "显式 n×n 矩阵"),
    ("chart.lessons.path", "path", "路径"),
    ("chart.lessons.kl_nats", "KL, nats", "KL，奈特"),
    ("chart.lessons.rank_kept", "rank r kept", "保留的秩 r"),
    ("chart.lessons.cosine", "cosine similarity", "余弦相似度"),
    ("chart.lessons.growth_square", "(n / n₀)², the O(n²) line", "(n / n₀)²，即 O(n²) 参考线"),
    ("chart.lessons.growth_bytes", "n × n weights' bytes (allocated)", "n × n 权重的字节数（实际分配）"),
    ("chart.lessons.growth_flops", "FLOPs of QKᵀ and AV (counted)", "QKᵀ 与 AV 的 FLOPs（计数）"),
    ("chart.lessons.growth_time", "materialised time (median, clock)", "显式计算耗时（中位数，计时）"),
    ("chart.lessons.measure", "measure", "度量"),
    ("chart.lessons.ratio", "× value at the shortest n", "相对最短 n 时的倍数"),
    ("chart.lessons.ms", "ms", "毫秒"),
    # A long text's lesson heatmaps pooled into blocks (inspector.charts.lessons; issue 33) --------------------------
    ("chart.lessons.pooled",
     "{n} tokens: each cell is the mean weight of a block of up to {block} queries × {block} keys (labelled by its "
     "first token), so the page stays light; Inspect draws every cell.",
     "{n} 个词元：每个格子是至多 {block} 个查询 × {block} 个键组成的块的平均权重（以块的第一个词元标注），"
     "使页面保持轻量；“查看”页会画出每个格子。"),
)
