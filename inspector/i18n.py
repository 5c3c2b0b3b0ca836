"""The app's strings in one catalogue, English and Simplified Chinese (the audience this tool began with).

:func:`t` looks a key up and fills its ``{placeholders}`` with ``str.format``; every key has every language of
:data:`LANGUAGES` with the same placeholders (tests/test_i18n.py checks both). Answers of the Lessons page are
catalogue entries too, filled with the numbers a lesson measured (:class:`inspector.lessons.Answer`).
English is the default and the fallback: a key missing from the catalogue is a programming error and raises.

Chart titles drawn by :mod:`inspector.charts` stay English (figures exported for slides keep one caption
language); labels on the pages, the sidebar and the lesson charts are translated.
"""

from __future__ import annotations

from string import Formatter
from typing import Mapping

LANGUAGES: tuple[str, ...] = ("en", "zh")
DEFAULT_LANGUAGE = "en"
LANGUAGE_NAMES: Mapping[str, str] = {"en": "English", "zh": "简体中文"}

CATALOGUE: dict[str, dict[str, str]] = {
    # ----------------------------------------------------------------------------------------- navigation (app.py)
    "nav.inspect": {"en": "Inspect", "zh": "查看"},
    "nav.heads": {"en": "Heads", "zh": "注意力头"},
    "nav.attribution": {"en": "Attribution", "zh": "归因"},
    "nav.lessons": {"en": "Lessons", "zh": "课程"},
    "nav.groundtruth": {"en": "Ground truth", "zh": "已知答案"},
    # ------------------------------------------------------------------------------------------ sidebar (inputs.py)
    "sidebar.language": {"en": "Language", "zh": "语言"},
    "sidebar.input": {"en": "Input", "zh": "输入"},
    "sidebar.model": {"en": "Model", "zh": "模型"},
    "sidebar.model_other": {"en": "Hub id or local folder", "zh": "Hub 模型 id 或本地文件夹"},
    "sidebar.model_other_help": {
        "en": "Safetensors weights only; models that need their own code are refused.",
        "zh": "只接受 safetensors 权重；需要运行自带代码的模型会被拒绝。"},
    "sidebar.examples": {"en": "Examples", "zh": "示例"},
    "sidebar.examples_placeholder": {"en": "Pick an example text…", "zh": "选择一段示例文本…"},
    "sidebar.text": {"en": "Text", "zh": "文本"},
    "sidebar.text_help": {"en": "Press Ctrl+Enter or click outside the box to run.",
                          "zh": "按 Ctrl+Enter 或点击文本框外即可运行。"},
    "sidebar.text_cut": {"en": "The text box holds at most {limit} characters: a longer paste was cut there.",
                         "zh": "文本框最多容纳 {limit} 个字符：更长的粘贴内容已在此处截断。"},
    "sidebar.backend": {"en": "Attention backend", "zh": "注意力后端"},
    "sidebar.backend_help": {
        "en": "auto: Triton on a GPU, blocked PyTorch on a CPU. torch: the blocked PyTorch path. "
              "triton: the project's Triton FlashAttention kernel (needs a GPU).",
        "zh": "auto：GPU 上用 Triton，CPU 上用分块 PyTorch。torch：分块 PyTorch 路径。"
              "triton：本项目的 Triton FlashAttention 内核（需要 GPU）。"},
    "sidebar.slide": {"en": "Slide mode", "zh": "幻灯片模式"},
    "sidebar.slide_help": {"en": "Large fonts and colour-blind-safe palettes, for slides.",
                           "zh": "大字号和色盲友好配色，适合幻灯片。"},
    "sidebar.share": {"en": "Share", "zh": "分享"},
    "sidebar.share_caption": {
        "en": "Copy this link (icon at the top right of the box): it reopens this model, text, head and options.",
        "zh": "复制此链接（框右上角的图标）：它会重新打开同样的模型、文本、注意力头和选项。"},
    "sidebar.share_warning": {"en": "Share link: {warning}", "zh": "分享链接：{warning}"},
    "inputs.type_model": {"en": "Type a hub id (org/name) or the path of a local model folder in the sidebar.",
                          "zh": "请在侧边栏输入 Hub 模型 id（org/name）或本地模型文件夹的路径。"},
    "inputs.loading": {"en": "Loading the model…", "zh": "正在加载模型…"},
    "inputs.load_failed": {"en": "The model could not be loaded", "zh": "模型无法加载"},
    "inputs.running": {"en": "Running attention…", "zh": "正在运行注意力…"},
    "inputs.run_failed": {"en": "The text could not be run", "zh": "无法运行这段文本"},
    # ------------------------------------------------------------------------------------------ Inspect page
    "inspect.caption": {
        "en": "Each query token spends a fixed attention budget (its weights sum to 1) on the keys. "
              "Low entropy: the head looks at a few tokens; high entropy: it spreads its attention out.",
        "zh": "每个查询词元把固定的注意力预算（权重之和为 1）分配给各个键。"
              "熵低：该头只看少数几个词元；熵高：它把注意力分散开。"},
    "inspect.computing": {"en": "Computing metrics…", "zh": "正在计算指标…"},
    "inspect.ran": {"en": "Ran {model} on {n} tokens with the {backend} backend ({ms} ms forward)",
                    "zh": "已用 {backend} 后端在 {n} 个词元上运行 {model}（前向 {ms} 毫秒）"},
    "inspect.reused": {"en": "Reused the run of {model} on {n} tokens (no model call)",
                       "zh": "复用了 {model} 在 {n} 个词元上的运行结果（未调用模型）"},
    "inspect.backend_metric": {"en": "Backend that ran", "zh": "实际运行的后端"},
    "inspect.tokens_metric": {"en": "Tokens", "zh": "词元数"},
    "inspect.tokens_help": {"en": "Tokens in the text / the most this model reads.",
                            "zh": "文本中的词元数 / 该模型最多能读的词元数。"},
    "inspect.tokens": {"en": "Tokens", "zh": "词元"},
    "inspect.truncated": {"en": "The text was cut to the model's {limit} tokens.",
                          "zh": "文本已被截断到模型上限 {limit} 个词元。"},
    "inspect.grid_caption": {
        "en": "Click a cell to show that head. Colour: mean over queries of each row's entropy divided by "
              "log(number of visible keys) — 0 = all weight on one key, 1 = spread evenly.",
        "zh": "点击一个格子即可显示该头。颜色：每行熵除以 log(可见键的数量) 后对所有查询取平均——"
              "0 = 所有权重集中在一个键上，1 = 均匀分布。"},
    "inspect.layer": {"en": "Layer", "zh": "层"},
    "inspect.head": {"en": "Head", "zh": "头"},
    "inspect.hide_special": {"en": "Hide special tokens", "zh": "隐藏特殊词元"},
    "inspect.drop_sink": {"en": "Drop the sink", "zh": "去掉注意力汇点"},
    "inspect.drop_sink_help": {
        "en": "Remove the first token's column (the attention sink) and renormalise each row to sum to 1.",
        "zh": "去掉第一个词元所在的列（注意力汇点），并把每行重新归一化为和为 1。"},
    "inspect.words": {"en": "Words, not pieces", "zh": "按词而非子词"},
    "inspect.words_help": {"en": "Attention to a word = sum over its pieces; from a word = mean over its pieces.",
                           "zh": "指向一个词的注意力 = 其各子词之和；来自一个词的注意力 = 其各子词的平均。"},
    "inspect.draw_large": {"en": "Draw the full {rows}×{cols} heatmap (slow in the browser)",
                           "zh": "绘制完整的 {rows}×{cols} 热力图（浏览器中较慢）"},
    "inspect.large_info": {
        "en": "The heatmap has more than {limit} rows; turn on the toggle above to draw it, or use words instead "
              "of pieces.",
        "zh": "热力图超过 {limit} 行；打开上方开关即可绘制，或改为按词显示。"},
    "inspect.heatmap_caption": {
        "en": "Row = the query token doing the attending; its weights over the key columns sum to 1 "
              "(unless special tokens are hidden).",
        "zh": "行 = 发出注意力的查询词元；它在各键列上的权重之和为 1（隐藏特殊词元时除外）。"},
    "inspect.every_head": {"en": "Every head of layer {layer}", "zh": "第 {layer} 层的所有头"},
    "inspect.multiples_info": {
        "en": "Small multiples are drawn for texts of up to {limit} tokens; this one has {n}.",
        "zh": "小多图只为不超过 {limit} 个词元的文本绘制；这段文本有 {n} 个。"},
    "inspect.bertviz": {"en": "bertviz views", "zh": "bertviz 视图"},
    "inspect.bertviz_toggle": {"en": "Show bertviz's head view and model view (served from this app, no CDN)",
                               "zh": "显示 bertviz 的头视图和模型视图（由本应用提供，不用 CDN）"},
    "inspect.head_view": {"en": "Head view", "zh": "头视图"},
    "inspect.model_view": {"en": "Model view", "zh": "模型视图"},
    "inspect.bertviz_layers": {
        "en": "Layers {first}–{last} only: every layer of a text this long would draw too many lines to stay "
              "responsive.",
        "zh": "只显示第 {first}–{last} 层：文本这么长时画出所有层的连线会太多，界面会变慢。"},
    "inspect.export": {"en": "Export", "zh": "导出"},
    "inspect.export_pack": {"en": "Export pack (PNG + SVG + JSON of the numbers, zip)",
                            "zh": "导出包（PNG + SVG + 数值 JSON，zip）"},
    "inspect.export_limit": {
        "en": "Image export is offered for charts of up to {limit} cells; this one has {cells}.",
        "zh": "图片导出只适用于不超过 {limit} 个单元格的图表；这张有 {cells} 个。"},
    "inspect.server_time": {"en": "Server time for this view: {ms} ms", "zh": "本视图的服务器耗时：{ms} 毫秒"},
    "inspect.not_called": {"en": " (model not called)", "zh": "（未调用模型）"},
    # ------------------------------------------------------------------------------------------ Lessons page
    "lessons.title": {"en": "Lessons: the questions people fumble, answered on this model",
                      "zh": "课程：大家常答不好的问题，用这个模型现场回答"},
    "lessons.caption": {
        "en": "Every number below is measured on the model and text in the sidebar; every answer is written from "
              "those numbers.",
        "zh": "下面每个数字都是在侧边栏选定的模型和文本上实测的；每段答案都由这些数字生成。"},
    "lessons.layer": {"en": "Layer", "zh": "层"},
    "lessons.head": {"en": "Head", "zh": "头"},
    "lessons.running": {"en": "Running the lessons' experiments…", "zh": "正在运行课程实验…"},
    "lessons.done": {"en": "Measured {model} on {n} tokens, layer {layer}, head {head} ({backend} backend)",
                     "zh": "已在 {n} 个词元上测量 {model}，第 {layer} 层第 {head} 个头（{backend} 后端）"},
    "lessons.question": {"en": "Question", "zh": "问题"},
    "lessons.answer": {"en": "Answer, from the numbers measured above", "zh": "答案（根据上面实测的数字）"},
    "lessons.simulation": {"en": "Simulation (seeded, not the model): {queries} random queries × {keys} keys, "
                                 "seed {seed}.",
                           "zh": "模拟（固定随机种子，不是模型）：{queries} 个随机查询 × {keys} 个键，种子 {seed}。"},
    "lesson1.title": {"en": "1 · The definition, with real shapes", "zh": "1 · 定义，用真实的形状"},
    "lesson1.question": {"en": "What exactly are X, Q, K, V, S, A and O — and how big are they here?",
                         "zh": "X、Q、K、V、S、A、O 到底是什么？在这里它们有多大？"},
    "lesson1.explain": {
        "en": "Attention is soft addressing: each query (intent) is compared with every key (address label); "
              "the scores S = QKᵀ·scale become weights A = softmax(S), each row a budget of 1; the output O = AV "
              "fetches the values (payload) with those weights.",
        "zh": "注意力是一种软寻址：每个查询（意图）与每个键（地址标签）比较；得分 S = QKᵀ·scale 经 softmax "
              "变成权重 A，每一行是总额为 1 的预算；输出 O = AV 按这些权重取回值（内容）。"},
    "lesson1.shapes": {"en": "Tensor shapes in this layer", "zh": "本层张量的形状"},
    "lesson1.values": {"en": "First values of the chosen head's tensors", "zh": "所选头各张量的前几个数值"},
    "lesson1.rope_note": {"en": "Q and K are shown as the layer received them: after the rotary embedding (RoPE).",
                          "zh": "Q 和 K 按该层实际收到的样子显示：已经过旋转位置编码（RoPE）。"},
    "lesson1.answer": {
        "en": "In layer {layer} the attention reads X of {n} tokens × d_model = {d_model}. Each of its {heads} heads "
              "({kv_heads} key/value heads) projects X to Q, K and V of {n} × d_k = {d_k}. S = QKᵀ × {scale} is "
              "{n} × {n}, and every row of A = softmax(S) sums to 1 (largest deviation {row_error}): a fixed "
              "routing budget per query. In head {head} the sharpest row is “{query}”, which spends {weight} of its "
              "budget on “{key}”. O = AV is again {n} × {d_k} per head; the heads are concatenated back to "
              "{n} × {d_model}.",
        "zh": "在第 {layer} 层，注意力读入的 X 是 {n} 个词元 × d_model = {d_model}。它的 {heads} 个头"
              "（{kv_heads} 个键/值头）各自把 X 投影成 {n} × d_k = {d_k} 的 Q、K、V。S = QKᵀ × {scale} 是 "
              "{n} × {n} 的矩阵，A = softmax(S) 的每一行之和都是 1（最大偏差 {row_error}）：每个查询有固定的"
              "路由预算。在第 {head} 个头中最集中的一行是“{query}”，它把 {weight} 的预算给了“{key}”。"
              "O = AV 每个头仍是 {n} × {d_k}；各头拼接后回到 {n} × {d_model}。"},
    "lesson1.answer.prenorm": {
        "en": "In layer {layer} the attention reads X = LN(x) — this is a pre-LN model, so the layer norm comes "
              "first — of {n} tokens × d_model = {d_model}. Each of its {heads} heads ({kv_heads} key/value heads) "
              "projects X to Q, K and V of {n} × d_k = {d_k}. S = QKᵀ × {scale} is {n} × {n}, and every row of "
              "A = softmax(S) sums to 1 (largest deviation {row_error}): a fixed routing budget per query. In head "
              "{head} the sharpest row is “{query}”, which spends {weight} of its budget on “{key}”. O = AV is "
              "again {n} × {d_k} per head; the heads are concatenated back to {n} × {d_model}.",
        "zh": "在第 {layer} 层，注意力读入的是 X = LN(x)——这是 pre-LN 模型，先做层归一化——共 {n} 个词元 × "
              "d_model = {d_model}。它的 {heads} 个头（{kv_heads} 个键/值头）各自把 X 投影成 {n} × d_k = {d_k} "
              "的 Q、K、V。S = QKᵀ × {scale} 是 {n} × {n} 的矩阵，A = softmax(S) 的每一行之和都是 1（最大偏差 "
              "{row_error}）：每个查询有固定的路由预算。在第 {head} 个头中最集中的一行是“{query}”，它把 "
              "{weight} 的预算给了“{key}”。O = AV 每个头仍是 {n} × {d_k}；各头拼接后回到 {n} × {d_model}。"},
    "lesson1.col_tensor": {"en": "tensor", "zh": "张量"},
    "lesson1.col_shape": {"en": "shape", "zh": "形状"},
    "lesson1.col_values": {"en": "row 0, first values", "zh": "第 0 行的前几个数值"},
    "lesson1.col_query": {"en": "query", "zh": "查询"},
    "lesson1.chart": {"en": "A = softmax(S) · layer {layer}, head {head}", "zh": "A = softmax(S) · 第 {layer} 层第 {head} 个头"},
    "lesson2.title": {"en": "2 · Why not softmax(XXᵀ)X?", "zh": "2 · 为什么不直接用 softmax(XXᵀ)X？"},
    "lesson2.question": {"en": "Why do queries and keys need separate projections W_Q and W_K?",
                         "zh": "为什么查询和键需要各自的投影 W_Q 和 W_K？"},
    "lesson2.explain": {
        "en": "Without projections every token's score with itself is its squared norm, usually the largest, so "
              "it mostly attends to itself; and x_i·x_j = x_j·x_i, so “i looks for j” would always equal “j looks "
              "for i”. Separate W_Q and W_K break both.",
        "zh": "没有投影时，每个词元与自身的得分就是它的范数平方，通常最大，所以它主要关注自己；而且 "
              "x_i·x_j = x_j·x_i，“i 找 j”永远等于“j 找 i”。独立的 W_Q 和 W_K 打破了这两点。"},
    "lesson2.chart_asym": {"en": "Asymmetry ‖S − Sᵀ‖/‖S‖ of each head", "zh": "各头的非对称度 ‖S − Sᵀ‖/‖S‖"},
    "lesson2.chart_tied": {"en": "Head {head}: weights before and after tying W_K := W_Q",
                           "zh": "第 {head} 个头：令 W_K := W_Q 前后的权重"},
    "lesson2.answer": {
        "en": "On this text, with XXᵀ the largest score of {xx_share} of the rows is on the diagonal: the token "
              "“only looks at itself”. With the learned QKᵀ that share is {qk_share} for head {head} ({qk_mean} on "
              "average over the layer's heads). S is far from symmetric: ‖S − Sᵀ‖/‖S‖ is {asym} for head {head} "
              "({asym_min}–{asym_max} across heads; 0 would mean W_Q = W_K). Tying W_K := W_Q for head {head} "
              "through the attention function moves each row by {tv} in total variation, changes the self-attending "
              "share to {tied_share} and the mean entropy from {entropy} to {tied_entropy} nats; the model's output "
              "changes by {change} ({measure}).",
        "zh": "在这段文本上，用 XXᵀ 时有 {xx_share} 的行最大得分落在对角线上：词元“只看自己”。用学到的 QKᵀ "
              "时，第 {head} 个头的这一比例是 {qk_share}（该层所有头平均为 {qk_mean}）。S 远非对称："
              "第 {head} 个头的 ‖S − Sᵀ‖/‖S‖ 为 {asym}（各头在 {asym_min}–{asym_max} 之间；为 0 则意味着 "
              "W_Q = W_K）。通过注意力函数令第 {head} 个头 W_K := W_Q 后，每行权重的总变差距离平均变化 {tv}，"
              "关注自身的比例变为 {tied_share}，平均熵从 {entropy} 变为 {tied_entropy} 奈特；模型输出变化 "
              "{change}（{measure}）。"},
    "lesson3.title": {"en": "3 · Where position enters", "zh": "3 · 位置信息从哪里进入"},
    "lesson3.question": {"en": "Attention itself is order-blind — so where does word order come in?",
                         "zh": "注意力本身不看顺序——那词序从哪里进入？"},
    "lesson3.explain": {
        "en": "BERT and GPT-2 add a learned position vector to X before any layer, so Q, K and V all carry it; "
              "RoPE models (Llama, Mistral, Qwen2) rotate only Q and K by an angle proportional to the position, "
              "so the score depends on the offset i − j and V carries no position. Heads that put most weight at "
              "one offset are positional.",
        "zh": "BERT 和 GPT-2 在进入各层之前把学到的位置向量加到 X 上，所以 Q、K、V 都带有位置；RoPE 模型"
              "（Llama、Mistral、Qwen2）只把 Q 和 K 按与位置成正比的角度旋转，因此得分取决于偏移 i − j，"
              "而 V 不含位置。把大部分权重放在某个固定偏移上的头就是位置头。"},
    "lesson3.chart": {"en": "Layer {layer}: mean weight by offset i − j", "zh": "第 {layer} 层：按偏移 i − j 的平均权重"},
    "lesson3.answer.absolute": {
        "en": "This model adds learned absolute position embeddings to X, so every projection sees position. In "
              "layer {layer}, {count} head(s) put more than {threshold} of their weight on one offset: {heads}. "
              "The most positional head is {top_head}, with {top_weight} at i − j = {top_offset}.",
        "zh": "这个模型把学到的绝对位置编码加到 X 上，因此每个投影都能看到位置。在第 {layer} 层，有 {count} "
              "个头把超过 {threshold} 的权重放在同一个偏移上：{heads}。位置性最强的是第 {top_head} 个头，"
              "在 i − j = {top_offset} 处权重为 {top_weight}。"},
    "lesson3.answer.rope": {
        "en": "This model uses rotary embeddings (RoPE): position rotates Q and K only, so the scores depend on the "
              "offset i − j and V carries none. In layer {layer}, {count} head(s) put more than {threshold} of "
              "their weight on one offset: {heads}. The most positional head is {top_head}, with {top_weight} at "
              "i − j = {top_offset}.",
        "zh": "这个模型使用旋转位置编码（RoPE）：位置只旋转 Q 和 K，因此得分取决于偏移 i − j，V 不带位置。"
              "在第 {layer} 层，有 {count} 个头把超过 {threshold} 的权重放在同一个偏移上：{heads}。"
              "位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 {top_weight}。"},
    "lesson3.answer.relative": {
        "en": "This model uses relative position scores inside attention. In layer {layer}, {count} head(s) put "
              "more than {threshold} of their weight on one offset: {heads}. The most positional head is "
              "{top_head}, with {top_weight} at i − j = {top_offset}.",
        "zh": "这个模型在注意力内部使用相对位置得分。在第 {layer} 层，有 {count} 个头把超过 {threshold} 的"
              "权重放在同一个偏移上：{heads}。位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 "
              "{top_weight}。"},
    "lesson3.answer.unknown": {
        "en": "The inspector cannot tell how this model encodes position. In layer {layer}, {count} head(s) put "
              "more than {threshold} of their weight on one offset: {heads}. The most positional head is "
              "{top_head}, with {top_weight} at i − j = {top_offset}.",
        "zh": "检查器无法判断这个模型如何编码位置。在第 {layer} 层，有 {count} 个头把超过 {threshold} 的权重"
              "放在同一个偏移上：{heads}。位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 "
              "{top_weight}。"},
    "lesson4.title": {"en": "4 · Why √d_k, and why not d_k", "zh": "4 · 为什么除以 √d_k，而不是 d_k"},
    "lesson4.question": {"en": "Which d is in √d, and what goes wrong with no scaling or with 1/d?",
                         "zh": "√d 里的 d 是哪个？不缩放或除以 d 会出什么问题？"},
    "lesson4.explain": {
        "en": "d is d_k, the size of one head's query and key. For entries of variance 1, q·k sums d_k products, "
              "so its variance is d_k: unscaled scores grow with d_k and the softmax saturates (one-hot, gradient "
              "≈ 0). Dividing by √d_k keeps the variance at 1; dividing by d_k shrinks it to 1/d_k and the weights "
              "go uniform.",
        "zh": "d 就是 d_k，即单个头的查询和键的维度。若各分量方差为 1，q·k 是 d_k 个乘积之和，方差就是 d_k："
              "不缩放时得分随 d_k 增大，softmax 饱和（接近独热，梯度≈0）。除以 √d_k 使方差保持为 1；除以 d_k "
              "则缩小到 1/d_k，权重趋于均匀。"},
    "lesson4.sweep_chart": {"en": "Simulation: mean entropy vs d under each scale", "zh": "模拟：各缩放下平均熵随 d 的变化"},
    "lesson4.variance_chart": {"en": "Simulation: variance of q·k vs d (log–log)", "zh": "模拟：q·k 方差随 d 的变化（双对数）"},
    "lesson4.real_chart": {"en": "Layer {layer}, head {head}: weights under each scale",
                           "zh": "第 {layer} 层第 {head} 个头：各缩放下的权重"},
    "lesson4a.answer": {
        "en": "Simulation: the variance of q·k grows with slope {slope} on a log–log plot (≈ d; {var_max} at "
              "d = {d_max}). At d = {d_max}, unscaled scores give entropy {h1} nats, max weight {m1} and a softmax "
              "Jacobian norm of {j1} — saturated, almost no gradient. With 1/√d the entropy stays between {h2_min} "
              "and {h2_max} nats at every d (at d = {d_max}: entropy {h2}, max weight {m2}, Jacobian norm {j2}). With 1/d the "
              "entropy is {h3} nats, close to the uniform log {keys} = {uniform}, max weight {m3}: nothing stands "
              "out.",
        "zh": "模拟：q·k 的方差在双对数坐标下以斜率 {slope} 增长（≈ d；d = {d_max} 时为 {var_max}）。在 "
              "d = {d_max} 时，不缩放的得分给出熵 {h1} 奈特、最大权重 {m1}、softmax 雅可比范数 {j1}——已饱和，"
              "几乎没有梯度。用 1/√d 时熵在各个 d 下都保持在 {h2_min} 到 {h2_max} 奈特之间（d = {d_max} 时熵 {h2}、最大"
              "权重 {m2}，雅可比范数 {j2}）。用 1/d 时熵为 {h3} 奈特，接近均匀分布的 log {keys} = {uniform}，"
              "最大权重 {m3}：没有任何键突出。"},
    "lesson4b.answer": {
        "en": "On the real layer {layer}, head {head} (d_k = {d_k}, the model's own scale {own}): without scaling "
              "the normalised entropy drops to {h1} (mean max weight {m1}) and the model's output changes by {c1} "
              "({measure}); with its own scale it is {h2} (max weight {m2}); with 1/d_k it rises to {h3} (max "
              "weight {m3}), nearly uniform, and the output changes by {c3}.",
        "zh": "在真实的第 {layer} 层第 {head} 个头上（d_k = {d_k}，模型自身的缩放为 {own}）：不缩放时归一化熵"
              "降到 {h1}（平均最大权重 {m1}），模型输出变化 {c1}（{measure}）；用模型自身的缩放时为 {h2}"
              "（最大权重 {m2}）；用 1/d_k 时升到 {h3}（最大权重 {m3}），接近均匀，输出变化 {c3}。"},
    "lesson4.table_scale": {"en": "scale", "zh": "缩放"},
    "lesson4.table_entropy": {"en": "normalised entropy", "zh": "归一化熵"},
    "lesson4.table_entropy_nats": {"en": "entropy (nats)", "zh": "熵（奈特）"},
    "lesson4.table_max": {"en": "mean max weight", "zh": "平均最大权重"},
    "lesson4.table_change": {"en": "output change", "zh": "输出变化"},
    "lesson5.col_step": {"en": "step", "zh": "步骤"},
    "lesson5.col_shape": {"en": "shape", "zh": "形状"},
    "lesson4.table_variance": {"en": "Var(q·k)", "zh": "Var(q·k)"},
    "lesson4.table_jacobian": {"en": "‖J‖_F (softmax Jacobian)", "zh": "‖J‖_F（softmax 雅可比）"},
    "lesson5.title": {"en": "5 · What multi-head splits", "zh": "5 · 多头到底拆分了什么"},
    "lesson5.question": {"en": "What does “multi-head” split, and what does each head end up doing?",
                         "zh": "“多头”拆分的是什么？每个头最后在做什么？"},
    "lesson5.explain": {
        "en": "The projection to d_model is reshaped into heads × d_k: each head gets its own small Q, K, V and "
              "its own softmax, so one layer can route several ways at once. S = QKᵀ of one head has rank at most "
              "d_k; A = softmax(S) is not bounded that way, because the softmax is not linear.",
        "zh": "投影到 d_model 的结果被重排成 头数 × d_k：每个头有自己的小 Q、K、V 和自己的 softmax，因此一层"
              "可以同时按几种方式路由。单个头的 S = QKᵀ 秩至多为 d_k；A = softmax(S) 不受此约束，因为 softmax "
              "不是线性的。"},
    "lesson5.chart": {"en": "Layer {layer}: each head's contribution norm after W_O",
                      "zh": "第 {layer} 层：各头经 W_O 后的贡献范数"},
    "lesson5.role.offset": {"en": "offset", "zh": "偏移"},
    "lesson5.role.special": {"en": "special token", "zh": "特殊词元"},
    "lesson5.role.content": {"en": "content", "zh": "内容"},
    "lesson5.answer": {
        "en": "Layer {layer} splits d_model = {d_model} into {heads} heads × d_k = {d_k}. On these {n} tokens each "
              "head's S = QKᵀ has effective rank {erank_min}–{erank_max} and numerical rank at most {rank_max}, "
              "never above min(n, d_k) = {bound}; A = softmax(S) reaches effective rank {erank_a_max}. After W_O, head "
              "{top_head} writes the most into the residual stream ({top_share} of the layer's total norm). "
              "Specialisation: {offset} head(s) follow an offset, {special} look mostly at special tokens, "
              "{content} route by content.",
        "zh": "第 {layer} 层把 d_model = {d_model} 拆成 {heads} 个头 × d_k = {d_k}。在这 {n} 个词元上，每个头的 "
              "S = QKᵀ 有效秩为 {erank_min}–{erank_max}，数值秩至多 {rank_max}，从不超过 min(n, d_k) = {bound}；"
              "A = softmax(S) 的有效秩可达 {erank_a_max}。经过 W_O 后，第 {top_head} 个头写入残差流的最多"
              "（占该层总范数的 {top_share}）。分工：{offset} 个头跟随固定偏移，{special} 个头主要看特殊词元，"
              "{content} 个头按内容路由。"},
    "lesson6.title": {"en": "6 · Entropy as a diagnostic", "zh": "6 · 用熵做诊断"},
    "lesson6.question": {"en": "What does attention entropy tell you about a model, layer by layer?",
                         "zh": "注意力熵逐层能告诉你模型的什么？"},
    "lesson6.explain": {
        "en": "Normalised entropy (entropy / log of the visible keys) is 0 when a row puts everything on one key "
              "and 1 when it is uniform. Clark et al. (2019) found BERT's early layers broad and later ones sharper; "
              "a head stuck near 0 (collapsed) or near 1 (diffuse) is worth a look.",
        "zh": "归一化熵（熵 / log 可见键数）在一行把全部权重放在一个键上时为 0，均匀时为 1。Clark 等人（2019）"
              "发现 BERT 浅层注意力宽、深层更尖锐；熵接近 0（坍缩）或接近 1（弥散）的头值得查看。"},
    "lesson6.answer.holds": {
        "en": "“Shallow broad, deep sharp” holds here: the first half of the {layers} layers averages {shallow} "
              "normalised entropy, the second half {deep} (Spearman ρ with depth {rho}). Alarms: {collapsed} of "
              "{heads} heads are collapsed (< {low}: {collapsed_list}) and {diffuse} diffuse (> {high}: "
              "{diffuse_list}).",
        "zh": "“浅层宽、深层尖”在这里成立：{layers} 层中前一半的平均归一化熵为 {shallow}，后一半为 {deep}"
              "（与深度的 Spearman ρ 为 {rho}）。警报：{heads} 个头中有 {collapsed} 个坍缩（< {low}："
              "{collapsed_list}），{diffuse} 个弥散（> {high}：{diffuse_list}）。"},
    "lesson6.answer.fails": {
        "en": "“Shallow broad, deep sharp” does not hold here: the first half of the {layers} layers averages "
              "{shallow} normalised entropy, the second half {deep} (Spearman ρ with depth {rho}). Alarms: "
              "{collapsed} of {heads} heads are collapsed (< {low}: {collapsed_list}) and {diffuse} diffuse "
              "(> {high}: {diffuse_list}).",
        "zh": "“浅层宽、深层尖”在这里不成立：{layers} 层中前一半的平均归一化熵为 {shallow}，后一半为 {deep}"
              "（与深度的 Spearman ρ 为 {rho}）。警报：{heads} 个头中有 {collapsed} 个坍缩（< {low}："
              "{collapsed_list}），{diffuse} 个弥散（> {high}：{diffuse_list}）。"},
    "lesson7.title": {"en": "7 · Why O(n²) matters, and what FlashAttention changes",
                      "zh": "7 · 为什么 O(n²) 很重要，FlashAttention 改变了什么"},
    "lesson7.question": {"en": "How do time and memory grow with the text length, and what does the flash path save?",
                         "zh": "时间和内存如何随文本长度增长？flash 路径省下了什么？"},
    "lesson7.explain": {
        "en": "Materialised attention writes the whole n × n score and weight matrices; FlashAttention (Dao et al. "
              "2022) streams keys in tiles with an online softmax, so the n × n matrix never exists in memory. The "
              "arithmetic is still O(n²): what changes is memory and memory traffic.",
        "zh": "物化的注意力会写出完整的 n × n 得分和权重矩阵；FlashAttention（Dao 等，2022）按块流式读取键并"
              "使用在线 softmax，n × n 矩阵从不存在于内存中。计算量仍是 O(n²)：改变的是内存占用和内存读写量。"},
    "lesson7.run": {"en": "Measure on this device", "zh": "在本设备上测量"},
    "lesson7.lengths": {"en": "Lengths n", "zh": "长度 n"},
    "lesson7.measuring": {"en": "Timing attention at n = {n}…", "zh": "正在测量 n = {n} 时的注意力耗时…"},
    "lesson7.col_mat_ms": {"en": "materialised, ms", "zh": "物化，毫秒"},
    "lesson7.col_flash_ms": {"en": "flash, ms", "zh": "flash，毫秒"},
    "lesson7.col_mat_theory": {"en": "materialised, MiB (theory)", "zh": "物化，MiB（理论）"},
    "lesson7.col_flash_theory": {"en": "flash, MiB (theory)", "zh": "flash，MiB（理论）"},
    "lesson7.col_mat_measured": {"en": "materialised, MiB (measured)", "zh": "物化，MiB（实测）"},
    "lesson7.col_flash_measured": {"en": "flash, MiB (measured)", "zh": "flash，MiB（实测）"},
    "lesson7.chart": {"en": "Time vs n on {device} (log–log)", "zh": "{device} 上耗时随 n 的变化（双对数）"},
    "lesson7.memory_note": {
        "en": "Bytes: theoretical extra memory of each path. Measured peaks come from CUDA's allocator; on a CPU "
              "PyTorch reports no peak, so only the theoretical column is shown.",
        "zh": "字节数：每条路径理论上额外占用的内存。实测峰值来自 CUDA 分配器；在 CPU 上 PyTorch 不报告峰值，"
              "因此只显示理论值。"},
    "lesson7.answer": {
        "en": "Measured just now on {device} with {heads} heads of d_k = {d_k}: at n = {n} the materialised path "
              "took {mat_ms} ms and needs {mat_mb} MiB for the n × n scores and weights; the flash path ({backend}) "
              "took {flash_ms} ms with {flash_mb} MiB beyond Q, K, V and O. Materialised time grew as n^{exponent} "
              "over these lengths.",
        "zh": "刚刚在 {device} 上用 {heads} 个 d_k = {d_k} 的头测得：n = {n} 时物化路径耗时 {mat_ms} 毫秒，"
              "n × n 得分和权重需要 {mat_mb} MiB；flash 路径（{backend}）耗时 {flash_ms} 毫秒，除 Q、K、V、O "
              "外只需 {flash_mb} MiB。在这些长度上物化路径的耗时按 n^{exponent} 增长。"},
    "lesson8.title": {"en": "8 · Quiz", "zh": "8 · 小测验"},
    "lesson8.explain": {"en": "Commit to a guess, then reveal the measurement. Your score is kept for this session.",
                        "zh": "先做出猜测，再揭晓实测结果。本次会话会记录你的得分。"},
    "lesson8.attention_q": {"en": "From query token “{query}”, which token will head {head} of layer {layer} attend "
                                  "to most?",
                            "zh": "从查询词元“{query}”出发，第 {layer} 层第 {head} 个头最关注哪个词元？"},
    "lesson8.query": {"en": "Query token", "zh": "查询词元"},
    "lesson8.guess": {"en": "Your guess", "zh": "你的猜测"},
    "lesson8.reveal": {"en": "Reveal", "zh": "揭晓"},
    "lesson8.importance_q": {"en": "Which token matters most for the model's output (delete it and see)?",
                             "zh": "哪个词元对模型输出最重要（删掉它看看）？"},
    "lesson8.right": {"en": "Right: “{key}” gets {weight} of the budget.", "zh": "答对了：“{key}”获得了 {weight} 的预算。"},
    "lesson8.wrong": {"en": "Not quite: the head sends {weight} to “{key}”; your guess “{guess}” got {guessed}.",
                      "zh": "不对：该头把 {weight} 给了“{key}”；你猜的“{guess}”只得到 {guessed}。"},
    "lesson8.importance_right": {"en": "Right: deleting “{token}” changes the output most ({change}).",
                                 "zh": "答对了：删掉“{token}”时输出变化最大（{change}）。"},
    "lesson8.importance_wrong": {
        "en": "Not quite: deleting “{token}” changes the output most ({change}); deleting “{guess}” changes it by "
              "{guessed}.",
        "zh": "不对：删掉“{token}”时输出变化最大（{change}）；删掉“{guess}”时变化为 {guessed}。"},
    "lesson8.score": {"en": "Score this session: {right} of {asked}", "zh": "本次会话得分：{asked} 题答对 {right} 题"},
    "measure.embedding": {"en": "cosine distance of the sentence embedding", "zh": "句向量的余弦距离"},
    "measure.distribution": {"en": "KL divergence of the predicted-token distribution, nats",
                             "zh": "预测词元分布的 KL 散度，奈特"},
    "measure.logits": {"en": "largest change of a class logit", "zh": "类别 logit 的最大变化"},
    "backend.blocked": {"en": "blocked PyTorch, query blocks", "zh": "分块 PyTorch，按查询分块"},
    "backend.triton": {"en": "Triton FlashAttention", "zh": "Triton FlashAttention"},
    "lesson8.computing": {"en": "Deleting each token in turn…", "zh": "正在依次删除每个词元…"},
    # ---------------------------------------------------------------- heads report and notices (issue 15)
    # ---------------------------------------------------------------- attribution verdicts (issue 15)
    # ---------------------------------------------------------------- ground-truth reading (issue 15)
    # ---------------------------------------------------------------- hardening (issue 18)
    # ---------------------------------------------------------------- compare page (issue 20)
    # ---------------------------------------------------------------- census (issue 16)
    "census.report_measured": {
        "en": "Census of {texts} texts ({tokens} tokens) of {model}; {errors} rows could not be measured (see "
              "errors.jsonl). Numbers are means over the texts with 95% intervals. Thresholds: collapsed = normalised "
              "entropy < {collapsed}, diffuse = normalised entropy > {diffuse}, sink = a key's sink score > {sink} "
              "(Gu et al. 2024).",
        "zh": "{model} 的普查：{texts} 条文本（{tokens} 个词元）；{errors} 行无法测量（见 errors.jsonl）。数值为各文本的"
              "平均值，附 95% 置信区间。阈值：塌缩 = 归一化熵 < {collapsed}，弥散 = 归一化熵 > {diffuse}，"
              "汇聚点 = 某个键的汇聚分数 > {sink}（Gu 等，2024）。"},
    "census.report_collapsed": {
        "en": "Layer {layer} head {head}: normalised entropy {value} (95% interval {interval}) < {threshold} "
              "(collapsed).",
        "zh": "第 {layer} 层第 {head} 个头：归一化熵 {value}（95% 区间 {interval}）< {threshold}（塌缩）。"},
    "census.report_diffuse": {
        "en": "Layer {layer} head {head}: normalised entropy {value} (95% interval {interval}) > {threshold} "
              "(diffuse) — its attention is spread nearly evenly.",
        "zh": "第 {layer} 层第 {head} 个头：归一化熵 {value}（95% 区间 {interval}）> {threshold}（弥散）——"
              "注意力几乎均匀分布。"},
    "census.report_no_collapsed": {
        "en": "No collapsed head: every normalised entropy is ≥ {threshold} (lowest {value}).",
        "zh": "没有塌缩的头：所有归一化熵都 ≥ {threshold}（最低 {value}）。"},
    "census.report_no_diffuse": {
        "en": "No diffuse head: every normalised entropy is ≤ {threshold} (highest {value}).",
        "zh": "没有弥散的头：所有归一化熵都 ≤ {threshold}（最高 {value}）。"},
    "census.report_more": {"en": "… and {count} more.", "zh": "……另有 {count} 个。"},
    "census.report_sinks": {
        "en": "{sinks} of {heads} heads have a sink key (mean largest sink score > {threshold}); {first} of them on "
              "the first token (highest first-token score {highest}, 95% interval {interval}, Layer {layer} head "
              "{head}).",
        "zh": "{heads} 个头中有 {sinks} 个存在汇聚键（平均最大汇聚分数 > {threshold}）；其中 {first} 个在第一个词元上"
              "（第一个词元的最高分数为 {highest}，95% 区间 {interval}，第 {layer} 层第 {head} 个头）。"},
    "census.open": {"en": "Open a census folder", "zh": "打开普查文件夹"},
    "census.path": {"en": "Census folder on this machine", "zh": "本机上的普查文件夹"},
    "census.path_help": {
        "en": "A folder written by `python -m inspector census --out FOLDER`; its numbers are shown without "
              "recomputing.",
        "zh": "由 `python -m inspector census --out FOLDER` 写出的文件夹；直接显示其中的数值，不重新计算。"},
    "census.hosted": {
        "en": "Census folders can only be opened on a local instance: this hosted instance does not read paths "
              "on its server.",
        "zh": "只能在本地实例中打开普查文件夹：此托管实例不读取服务器上的路径。"},
    "census.caption": {
        "en": "{texts} texts, {tokens} tokens, {errors} refused rows — model {model}, engine {engine}, code "
              "{code}.",
        "zh": "{texts} 条文本，{tokens} 个词元，{errors} 行被拒绝——模型 {model}，引擎 {engine}，代码 {code}。"},
    "census.statistic": {"en": "Statistic", "zh": "统计量"},
    "census.intervals": {"en": "Per-head means with 95% intervals", "zh": "各头的平均值及 95% 区间"},
    "census.incomplete": {
        "en": "This census is not finished: {texts} texts so far. Rerun the same command to resume it.",
        "zh": "此普查尚未完成：目前 {texts} 条文本。重新运行同一命令即可继续。"},
    # ---------------------------------------------------------------- teacher walkthrough (issue 17)
}


def _placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in Formatter().parse(template) if name}


def placeholders(key: str, lang: str) -> set[str]:
    """The ``{names}`` that ``key`` expects in ``lang`` (tests check every language expects the same)."""
    return _placeholders(CATALOGUE[key][lang])


def t(key: str, lang: str = DEFAULT_LANGUAGE, /, **values: object) -> str:
    """The catalogue string ``key`` in ``lang`` (English for an unsupported language), filled with ``values``.

    Raises KeyError for an unknown key or a missing placeholder value: both are bugs in the caller."""
    entry = CATALOGUE[key]
    template = entry.get(lang if lang in LANGUAGES else DEFAULT_LANGUAGE, entry[DEFAULT_LANGUAGE])
    return template.format(**values) if values or _placeholders(template) else template
