"""The app's strings in one catalogue, English and Simplified Chinese (the audience this tool began with).

:func:`t` looks a key up and fills its ``{placeholders}`` with ``str.format``; every key has every language of
:data:`LANGUAGES` with the same placeholders (tests/test_i18n.py checks both). Answers of the Lessons page are
catalogue entries too, filled with the numbers a lesson measured (:class:`inspector.analyses.lessons.Answer`).
English is the default and the fallback: a key missing from the catalogue is a programming error and raises.

Charts speak the page's language too: every builder in :mod:`inspector.charts` takes ``lang`` and draws its
titles, axes, legends, tooltips and category names from here, so a figure exported from a Chinese page is Chinese
(tests/chart_text.py reads what a chart shows; the chart tests build each one in 简体中文 and find no English).
"""

from __future__ import annotations

from collections.abc import Mapping
from string import Formatter

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
    "lesson1.chart": {
        "en": "A = softmax(S) · layer {layer}, head {head}",
        "zh": "A = softmax(S) · 第 {layer} 层第 {head} 个头"},
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
    "lesson3.chart": {
        "en": "Layer {layer}: mean weight by offset i − j",
        "zh": "第 {layer} 层：按偏移 i − j 的平均权重"},
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
    "lesson4.sweep_chart": {
        "en": "Simulation: mean entropy vs d under each scale",
        "zh": "模拟：各缩放下平均熵随 d 的变化"},
    "lesson4.variance_chart": {
        "en": "Simulation: variance of q·k vs d (log–log)",
        "zh": "模拟：q·k 方差随 d 的变化（双对数）"},
    "lesson4.real_chart": {"en": "Layer {layer}, head {head}: weights under each scale",
                           "zh": "第 {layer} 层第 {head} 个头：各缩放下的权重"},
    "lesson4a.answer": {
        "en": "Simulation: the variance of q·k grows with slope {slope} on a log–log plot (≈ d; {var_max} at "
              "d = {d_max}). At d = {d_max}, unscaled scores give entropy {h1} nats, max weight {m1} and a softmax "
              "Jacobian norm of {j1} — saturated, almost no gradient. With 1/√d the entropy stays between {h2_min} "
              "and {h2_max} nats at every d (at d = {d_max}: entropy {h2}, max weight {m2}, Jacobian norm {j2}). With"
              " 1/d the "
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
    "lesson8.right": {
        "en": "Right: “{key}” gets {weight} of the budget.",
        "zh": "答对了：“{key}”获得了 {weight} 的预算。"},
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
    "notice.oom_fewer_weights": {
        "en": "The {where} ran out of memory keeping several layers' attention weights; this run kept layer "
              "{layer}'s only, so another layer needs a new run.",
        "zh": "{where} 在保留多层注意力权重时内存不足；本次运行只保留了第 {layer} 层的权重，查看其他层需要重新运行。"},
    "notice.oom_cpu": {
        "en": "The {where} ran out of memory; this view was computed on the CPU instead (slower). The next run tries "
              "the {where} again.",
        "zh": "{where} 内存不足；本视图改在 CPU 上计算（较慢）。下次运行会再次尝试 {where}。"},
    "notice.sink_dropped": {"en": "Rows renormalised after removing key 0 ({token}), the attention sink.",
                            "zh": "去掉第 0 个键（{token}，即注意力汇点）后，各行已重新归一化。"},
    "notice.sink_dropped_emptied": {
        "en": "Rows renormalised after removing key 0 ({token}), the attention sink; rows that saw only that key are "
              "left at 0.",
        "zh": "去掉第 0 个键（{token}，即注意力汇点）后，各行已重新归一化；只看到这个键的行保持为 0。"},
    "notice.words_merged": {
        "en": "Word view: {tokens} tokens merged into {words} words — attention to a word is the sum over its pieces, "
              "attention from a word is the mean over its pieces, so rows still sum to 1.",
        "zh": "按词显示：{tokens} 个词元合并成 {words} 个词——指向一个词的注意力是其各子词之和，来自一个词的注意力是"
              "其各子词的平均，所以每行之和仍为 1。"},
    "notice.words_unchanged": {"en": "Word view: every word of this text is a single token, so nothing was merged.",
                               "zh": "按词显示：这段文本的每个词都只有一个词元，所以没有合并任何内容。"},
    "notice.special_hidden": {
        "en": "Special tokens hidden ({hidden}): rows no longer sum to 1 — what is missing went to the hidden tokens.",
        "zh": "已隐藏特殊词元（{hidden}）：各行之和不再为 1——缺少的部分分给了被隐藏的词元。"},
    "notice.weights_budget": {
        "en": "Every layer's attention weights at {n} tokens would take {needed} MiB, more than the {budget} MiB "
              "budget of one request: statistics (entropy, sink mass) cover every layer, exact weights only layer "
              "{layer}. Choosing another layer runs the model again.",
        "zh": "在 {n} 个词元上保存每一层的注意力权重需要 {needed} MiB，超过单次请求 {budget} MiB 的预算：统计量"
              "（熵、汇点质量）覆盖所有层，精确权重只保留第 {layer} 层。选择其他层会重新运行模型。"},
    "heads.report.texts_one": {"en": "{n} text", "zh": "{n} 段文本"},
    "heads.report.texts_many": {"en": "{n} texts", "zh": "{n} 段文本"},
    "heads.report.measured": {
        "en": "Measured on {texts} ({tokens} tokens) of {model}; numbers are means over the texts. Thresholds: "
              "collapsed = normalised entropy < {collapsed}, diffuse = normalised entropy > {diffuse}, sink = a "
              "key's sink score > {sink} (Gu et al. 2024).",
        "zh": "在 {model} 的 {texts}（共 {tokens} 个词元）上测量；数字是各文本的平均值。阈值：坍缩 = 归一化熵 < "
              "{collapsed}，弥散 = 归一化熵 > {diffuse}，汇点 = 某个键的汇点得分 > {sink}（Gu 等，2024）。"},
    "heads.report.head": {"en": "Layer {layer} head {head}", "zh": "第 {layer} 层第 {head} 个头"},
    "heads.category.self": {"en": "the token itself", "zh": "词元自身"},
    "heads.category.previous": {"en": "the previous token", "zh": "前一个词元"},
    "heads.category.next": {"en": "the next token", "zh": "后一个词元"},
    "heads.category.punctuation": {"en": "punctuation", "zh": "标点"},
    "heads.category.token": {"en": "{token}", "zh": "词元 {token}"},
    "heads.report.looks": {"en": "{share} of its attention goes to {target}", "zh": "它 {share} 的注意力流向{target}"},
    "heads.mode.zero": {"en": "zero", "zh": "置零"},
    "heads.mode.mean": {"en": "mean", "zh": "换成均值"},
    "heads.report.ablation": {
        "en": "ablating it ({mode}) changes the output by {change} ({measure}; rank {rank} of {total})",
        "zh": "消融它（{mode}）使输出变化 {change}（{measure}；在 {total} 个头中排第 {rank}）"},
    "heads.report.no_repeats": {
        "en": "No token repeats in the text(s), so induction heads cannot show here: give a text that repeats a "
              "phrase (… A B … A) to find them.",
        "zh": "文本中没有重复出现的词元，所以这里看不出归纳头：给一段重复某个短语（… A B … A）的文本才能找到它们。"},
    "heads.report.no_induction": {
        "en": "No induction head: no head puts more than {threshold} of a repeated token's attention on the token "
              "after its earlier occurrence (highest {highest}, {head}).",
        "zh": "没有归纳头：没有哪个头把重复词元超过 {threshold} 的注意力放在它上次出现之后的那个词元上"
              "（最高 {highest}，{head}）。"},
    "heads.report.scored_head": {"en": "{head} ({score})", "zh": "{head}（{score}）"},
    "heads.report.list_separator": {"en": ", ", "zh": "、"},
    "heads.report.and_more_inline": {"en": ", and {n} more", "zh": "，另有 {n} 个"},
    "heads.report.induction": {
        "en": "Induction heads (a repeated token attends to the token that followed its earlier occurrence — Olsson "
              "et al. 2022; score > {threshold}): {named}{more}.",
        "zh": "归纳头（重复出现的词元关注它上次出现时紧随其后的词元——Olsson 等，2022；得分 > {threshold}）："
              "{named}{more}。"},
    "heads.report.and_more": {"en": "… and {n} more.", "zh": "……另有 {n} 个。"},
    "heads.report.collapsed": {
        "en": "{head}: normalised entropy {entropy} < {threshold} (collapsed) — {looks}; {ablation}.",
        "zh": "{head}：归一化熵 {entropy} < {threshold}（坍缩）——{looks}；{ablation}。"},
    "heads.report.no_collapsed": {
        "en": "No collapsed head: every normalised entropy is ≥ {threshold} (lowest {lowest}).",
        "zh": "没有坍缩的头：所有归一化熵都 ≥ {threshold}（最低 {lowest}）。"},
    "heads.report.diffuse": {
        "en": "{head}: normalised entropy {entropy} > {threshold} (diffuse) — its attention is spread nearly evenly; "
              "{ablation}.",
        "zh": "{head}：归一化熵 {entropy} > {threshold}（弥散）——它的注意力几乎均匀分布；{ablation}。"},
    "heads.report.no_diffuse": {"en": "No diffuse head: every normalised entropy is ≤ {threshold} (highest {highest}).",
                                "zh": "没有弥散的头：所有归一化熵都 ≤ {threshold}（最高 {highest}）。"},
    "heads.report.sinks": {
        "en": "{sinks} of {heads} heads have a sink key (largest sink score > {threshold}); {first} of them on the "
              "first token (highest first-token score {highest}, {head}).",
        "zh": "{heads} 个头中有 {sinks} 个有汇点键（最大汇点得分 > {threshold}）；其中 {first} 个落在第一个词元上"
              "（第一个词元的最高得分 {highest}，{head}）。"},
    "heads.report.idle_sink": {
        "en": "{head}: {attention} of its attention goes to [CLS]/[SEP] but only {value} of its norm-weighted "
              "attention ‖α f(x)‖ (Kobayashi et al. 2020) — heavy sink attention that moves little value; {ablation}.",
        "zh": "{head}：它 {attention} 的注意力流向 [CLS]/[SEP]，但按范数加权的注意力 ‖α f(x)‖ 只有 {value} 流向那里"
              "（Kobayashi 等，2020）——大量汇点注意力却几乎不搬运值；{ablation}。"},
    "heads.report.no_idle_sink": {
        "en": "No head sends more than {share} of its attention to [CLS]/[SEP] while moving less than half as much "
              "of its value there.",
        "zh": "没有哪个头在把超过 {share} 的注意力送往 [CLS]/[SEP] 的同时，搬运到那里的值还不到注意力的一半。"},
    "heads.report.rankings_agree": {"en": "Spearman correlation of the two rankings over all heads: {rho}.",
                                    "zh": "两种排名在所有头上的 Spearman 相关系数：{rho}。"},
    "heads.report.rankings_incomparable": {
        "en": "One of the two scores is the same for every head, so the rankings cannot be compared.",
        "zh": "两个得分之一在每个头上都相同，所以无法比较两种排名。"},
    "heads.report.most_important": {
        "en": "Most important head by ablation: {ablation_head} ({measure} {ablation}); by Michel et al.'s gradient "
              "score: {gradient_head} (score {gradient}, layer-normalised). {agreement}",
        "zh": "按消融最重要的头：{ablation_head}（{measure} {ablation}）；按 Michel 等人的梯度得分：{gradient_head}"
              "（得分 {gradient}，按层归一化）。{agreement}"},
    "heads.report.pair_redundant": {"en": "redundant: removing both costs little more than the larger of the two",
                                    "zh": "冗余：同时移除两者的代价只比两者中较大的那个多一点"},
    "heads.report.pair_partly_redundant": {
        "en": "partly redundant: removing both costs more than either alone but less than the two added",
        "zh": "部分冗余：同时移除两者的代价大于单独移除任何一个，但小于两者之和"},
    "heads.report.pair_not_redundant": {
        "en": "not redundant in effect: removing both costs as much as the two added, or more",
        "zh": "实际效果上不冗余：同时移除两者的代价等于或超过两者之和"},
    "heads.report.pair": {
        "en": "Attention-alike pair {a} & {b} (JS divergence {js} nats, of at most ln 2 = 0.693): ablating {a} "
              "changes the output by {first}, {b} by {second}, both by {both} — {verdict}.",
        "zh": "注意力相似的一对 {a} 和 {b}（JS 散度 {js} 奈特，最大为 ln 2 = 0.693）：消融 {a} 使输出变化 {first}，"
              "消融 {b} 变化 {second}，两者都消融变化 {both}——{verdict}。"},
    "heads.report.pruning": {
        "en": "Pruning by gradient importance: removing {removed} of {heads} heads ({share}) changes the output by "
              "{half}; removing all of them by {everything} ({measure}).",
        "zh": "按梯度重要性剪枝：移除 {heads} 个头中的 {removed} 个（{share}）使输出变化 {half}；全部移除时变化 "
              "{everything}（{measure}）。"},
    "heads.title": {"en": "Heads", "zh": "注意力头"},
    "heads.caption": {
        "en": "Which heads are healthy, which attend to sinks, which are redundant, and which matter — every "
              "statistic is paired with what happens to the model's output when the head is removed.",
        "zh": "哪些头健康、哪些关注汇点、哪些冗余、哪些重要——每个统计量都配上移除该头时模型输出的变化。"},
    "heads.progress_start": {"en": "Measuring {n} text(s)…", "zh": "正在测量 {n} 段文本…"},
    "heads.progress": {"en": "Measuring {n} text(s): step {done} of {total}…",
                       "zh": "正在测量 {n} 段文本：第 {done} 步，共 {total} 步…"},
    "heads.texts": {"en": "Texts", "zh": "文本"},
    "heads.mode_text": {"en": "This text", "zh": "当前文本"},
    "heads.mode_corpus": {"en": "Corpus ({n} sentences)", "zh": "语料库（{n} 个句子）"},
    "heads.mode_census": {"en": "Census folder", "zh": "普查文件夹"},
    "heads.texts_help": {
        "en": "The sidebar's text, or the bundled corpus (assets/corpus) so a verdict is not drawn from one "
              "sentence. Corpus numbers are means over its texts.",
        "zh": "侧边栏中的文本，或自带的语料库（assets/corpus），这样结论不会只来自一个句子。语料库的数字是其中各文本"
        "的平均值。"},
    "heads.ablation": {"en": "Remove a head by", "zh": "移除一个头的方式"},
    "heads.ablation_help": {
        "en": "zero: its output is set to 0. mean: replaced by its mean over the text, keeping its constant offset "
              "and removing only what depends on the token.",
        "zh": "置零：把它的输出设为 0。换成均值：用它在整段文本上的均值代替，保留恒定偏移，只去掉随词元变化的部分。"},
    "heads.thresholds": {"en": "Health thresholds", "zh": "健康阈值"},
    "heads.collapsed_below": {"en": "Collapsed below", "zh": "低于此值为坍缩"},
    "heads.collapsed_help": {"en": "Normalised entropy under this: nearly one-hot rows.",
                             "zh": "归一化熵低于此值：各行几乎是独热的。"},
    "heads.diffuse_above": {"en": "Diffuse above", "zh": "高于此值为弥散"},
    "heads.diffuse_help": {"en": "Normalised entropy over this: nearly uniform rows.",
                           "zh": "归一化熵高于此值：各行几乎是均匀的。"},
    "heads.sink_above": {"en": "Sink above", "zh": "高于此值为汇点"},
    "heads.sink_help": {"en": "Gu et al. 2024: a key whose mean received weight exceeds this is a sink.",
                        "zh": "Gu 等（2024）：平均收到的权重超过此值的键就是汇点。"},
    "heads.corpus_size": {"en": "Sentences from the corpus", "zh": "取自语料库的句子数"},
    "heads.corpus_size_help": {"en": "Fewer sentences run faster; the verdict rests on fewer examples.",
                               "zh": "句子越少运行越快；但结论依据的例子也越少。"},
    "heads.measuring": {"en": "Measuring {heads} heads on {n} text(s)…", "zh": "正在 {n} 段文本上测量 {heads} 个头…"},
    "heads.failed": {"en": "The head report could not be computed", "zh": "无法计算注意力头报告"},
    "heads.done": {"en": "{model}: {n} text(s), {backend} backend, {seconds} s of measurement",
                   "zh": "{model}：{n} 段文本，{backend} 后端，测量耗时 {seconds} 秒"},
    "heads.glance": {"en": "Every head at a glance", "zh": "所有头一览"},
    "heads.colour_by": {"en": "Colour by", "zh": "着色依据"},
    "heads.grid.entropy": {"en": "Entropy", "zh": "熵"},
    "heads.grid.sink": {"en": "Sink score", "zh": "汇点得分"},
    "heads.grid.induction": {"en": "Induction", "zh": "归纳"},
    "heads.grid.ablation": {"en": "Importance (ablation)", "zh": "重要性（消融）"},
    "heads.grid.gradient": {"en": "Importance (gradient)", "zh": "重要性（梯度）"},
    "heads.grid_caption": {
        "en": "Importance by ablation = {measure} when the head alone is removed ({mode}); by gradient = Michel et "
              "al.'s |∂L/∂gate| at gate 1, divided by its layer's ℓ2 norm. Induction = Olsson et al.'s score: a "
              "repeated token's attention on the token that followed its earlier occurrence (grey when the text "
              "repeats no token).",
        "zh": "按消融的重要性 = 只移除该头时的{measure}（{mode}）；按梯度的重要性 = Michel 等人的 |∂L/∂gate|"
              "（gate = 1 处），再除以所在层的 ℓ2 范数。归纳 = Olsson 等人的得分：重复出现的词元对它上次出现时"
              "紧随其后的词元的注意力（文本中没有重复词元时为灰色）。"},
    "heads.health": {"en": "Health report", "zh": "健康报告"},
    "heads.where": {"en": "Where the attention goes (Clark et al. 2019) and what it moves (Kobayashi et al. 2020)",
                    "zh": "注意力流向哪里（Clark 等，2019）以及它搬运了什么（Kobayashi 等，2020）"},
    "heads.column.head": {"en": "head", "zh": "头"},
    "heads.column.punctuation": {"en": "punctuation", "zh": "标点"},
    "heads.column.self": {"en": "self", "zh": "自身"},
    "heads.column.previous": {"en": "previous", "zh": "前一个"},
    "heads.column.next": {"en": "next", "zh": "后一个"},
    "heads.column.first_sink": {"en": "first-token sink score", "zh": "第一个词元的汇点得分"},
    "heads.column.distance": {"en": "mean distance (tokens)", "zh": "平均距离（词元）"},
    "heads.where_caption": {
        "en": "Shares of each head's attention budget, mean over queries; ‖αf(x)‖ columns: the same share of the "
              "norm-weighted attention, which is small when a sink receives weight but sends little value.",
        "zh": "每个头的注意力预算分配到各处的比例，对所有查询取平均；‖αf(x)‖ 列：按范数加权的注意力的同一比例——"
              "汇点收到权重却几乎不送出值时，这一比例很小。"},
    "heads.redundancy": {"en": "Redundancy", "zh": "冗余"},
    "heads.tab_js": {"en": "Attend alike (JS divergence)", "zh": "关注相似（JS 散度）"},
    "heads.tab_cka": {"en": "Write alike (CKA)", "zh": "写入相似（CKA）"},
    "heads.tab_mds": {"en": "Map (MDS)", "zh": "分布图（MDS）"},
    "heads.pairs.pair": {"en": "pair", "zh": "头对"},
    "heads.pairs.js": {"en": "JS divergence", "zh": "JS 散度"},
    "heads.pairs.first": {"en": "ablate first", "zh": "消融第一个"},
    "heads.pairs.second": {"en": "ablate second", "zh": "消融第二个"},
    "heads.pairs.both": {"en": "ablate both", "zh": "两个都消融"},
    "heads.pairs_caption": {"en": "The most attention-alike pairs, each ablated alone and together ({measure}).",
                            "zh": "注意力最相似的几对头，分别单独消融和一起消融（{measure}）。"},
    "heads.pruning": {"en": "Pruning", "zh": "剪枝"},
    "heads.download_json": {"en": "Numbers (JSON)", "zh": "数值（JSON）"},
    "heads.download_png": {"en": "Pruning curve (PNG)", "zh": "剪枝曲线（PNG）"},
    # ---------------------------------------------------------------- attribution verdicts (issue 15)
    "attribution.where_every_head": {"en": "layer {layer}, every head, query {query} (“{token}”)",
                                     "zh": "第 {layer} 层、所有头、查询 {query}（“{token}”）"},
    "attribution.where_head": {"en": "layer {layer}, head {head}, query {query} (“{token}”)",
                               "zh": "第 {layer} 层第 {head} 个头、查询 {query}（“{token}”）"},
    "attribution.uniform": {
        "en": "uniform weights changed f by {change:.3g} (JSD {jsd:.2f} nats), and {permutations} random permutations "
              "by a median of {median:.3g} (largest weight {max_weight:.2f})",
        "zh": "均匀权重使 f 改变了 {change:.3g}（JSD {jsd:.2f} 奈特），{permutations} 次随机置换使其改变的中位数为 "
              "{median:.3g}（最大权重 {max_weight:.2f}）"},
    "attribution.verdict_not_run": {
        "en": "At {where}, {uniform}. Run the adversarial search to see how different a row can be for the same "
              "output.",
        "zh": "在{where}处，{uniform}。运行对抗搜索，看看在输出相同的情况下一行注意力能有多不同。"},
    "attribution.verdict_none_found": {
        "en": "At {where}, {uniform}; the adversarial search found no row within |Δf| ≤ {epsilon:g}, so this attention "
              "is constrained by the output here.",
        "zh": "在{where}处，{uniform}；对抗搜索没有找到满足 |Δf| ≤ {epsilon:g} 的行，因此这里的注意力受到输出的约束。"},
    "attribution.verdict_found": {
        "en": "At {where}, an attention row {strength} from the model's own (JSD {jsd:.2f} of at most {jsd_max:.2f} "
              "nats) changes f by only {change:.3g} (≤ ε = {epsilon:g}); {uniform}. {conclusion}",
        "zh": "在{where}处，一行与模型自身注意力{strength}的注意力（JSD {jsd:.2f}，最大为 {jsd_max:.2f} 奈特）只使 f "
              "改变了 {change:.3g}（≤ ε = {epsilon:g}）；{uniform}。{conclusion}"},
    "attribution.strength_entirely": {"en": "almost entirely different", "zh": "几乎完全不同"},
    "attribution.strength_substantially": {"en": "substantially different", "zh": "明显不同"},
    "attribution.strength_mildly": {"en": "only mildly different", "zh": "仅略有不同"},
    "attribution.conclusion_not_unique": {"en": "So this attention map is not a unique explanation of the output.",
                                          "zh": "所以这张注意力图并不是输出的唯一解释。"},
    "attribution.conclusion_constrained": {"en": "Here the output does constrain the attention.",
                                           "zh": "在这里，输出确实约束了注意力。"},
    "attribution.conclusion_still_improving": {
        "en": "The search was still improving when it stopped after {steps} steps; allow more steps before concluding "
              "that the output constrains this attention.",
        "zh": "搜索在 {steps} 步后停止时仍在改进；在断定输出约束了这里的注意力之前，请允许更多步数。"},
    "attribution.flip_class": {"en": "the predicted class changes", "zh": "预测的类别发生变化"},
    "attribution.flip_halfway": {
        "en": "f falls below {threshold:.4g}, halfway from f(x) = {start:.4g} to f with every content token removed "
              "({floor:.4g}) — this target has no decision to flip",
        "zh": "f 降到 {threshold:.4g} 以下，即从 f(x) = {start:.4g} 到移除所有内容词元后的 f（{floor:.4g}）的中点——"
              "这个目标没有可翻转的决策"},
    # ---------------------------------------------------------------- ground-truth reading (issue 15)
    "gt.task.planted-token.description": {
        "en": "A row of neutral words with one sentiment word (excellent, wonderful, delightful; terrible, awful, "
              "dreadful) planted at a random position; the label is that word's sentiment.",
        "zh": "一串中性词中在随机位置植入一个情感词（excellent、wonderful、delightful；terrible、awful、dreadful）；"
              "标签就是这个词的情感。"},
    "gt.task.planted-token.truth": {"en": "the planted sentiment word", "zh": "植入的情感词"},
    "gt.task.induction.description": {
        "en": "Distinct words … A B … followed by A again; the model must predict B, the word that came after A the "
              "first time (an induction head's job).",
        "zh": "一串互不相同的词 … A B …，随后 A 再次出现；模型必须预测 B，即 A 第一次出现后紧跟的那个词（归纳头的工作"
        "）。"},
    "gt.task.induction.truth": {
        "en": "the earlier B — the word the prediction copies",
        "zh": "前面的 B——预测要复制的那个词"},
    "gt.variant.honest": {"en": "honest", "zh": "诚实"},
    "gt.variant.deceptive": {"en": "deceptive", "zh": "欺骗性"},
    "gt.words.summary": {
        "en": "{model} ({task}, {variant}): accuracy {accuracy} on {examples} fresh examples; causal token = {truth}.",
        "zh": "{model}（{task}，{variant}）：在 {examples} 个新样例上准确率 {accuracy}；因果词元 = {truth}。"},
    "gt.words.row": {
        "en": "  {method} top-1 {top1} [{low}–{high}]  top-{k} {topk}  mean rank {rank} [{rank_low}–{rank_high}]",
        "zh": "  {method} top-1 {top1} [{low}–{high}]  top-{k} {topk}  平均排名 {rank} [{rank_low}–{rank_high}]"},
    "gt.words.chance": {"en": "chance", "zh": "随机水平"},
    "gt.words.chance_row": {"en": "  {method} top-1 {top1}            top-{k} {topk}  mean rank {rank}",
                            "zh": "  {method} top-1 {top1}            top-{k} {topk}  平均排名 {rank}"},
    "gt.words.bound": {"en": " (bound {bound})", "zh": "（上限 {bound}）"},
    "gt.words.mass": {"en": "  mean attention on the causal token: {mass} [{low}–{high}]{bound}",
                      "zh": "  因果词元上的平均注意力：{mass} [{low}–{high}]{bound}"},
    "gt.target.class": {"en": "the probability the classifier gives class “{label}”{prediction}",
                        "zh": "分类器给类别“{label}”的概率{prediction}"},
    "gt.target.class_prediction": {"en": " (its prediction)", "zh": "（它的预测）"},
    "gt.target.next_token": {"en": "the log-probability of “{token}” as the next token after the text{prediction}",
                             "zh": "“{token}”作为文本之后下一个词元的对数概率{prediction}"},
    "gt.target.next_token_prediction": {"en": " (the model's top prediction)", "zh": "（模型的首选预测）"},
    "gt.reading.separator": {"en": ", ", "zh": "、"},
    "gt.reading.clause_separator": {"en": ", ", "zh": "；"},
    "gt.reading.method_rate": {"en": "{method} ({rate})", "zh": "{method}（{rate}）"},
    "gt.reading.above": {
        "en": "Better than chance — the 95 % interval of the top-1 hit rate lies above the {chance} a random ranking "
              "gets: {methods}.",
        "zh": "优于随机——top-1 命中率的 95% 区间高于随机排序得到的 {chance}：{methods}。"},
    "gt.reading.level": {"en": "Not distinguishable from chance on {examples} examples: {methods}.",
                         "zh": "在 {examples} 个样例上与随机水平无法区分：{methods}。"},
    "gt.reading.below": {
        "en": "Worse than chance — they rank the causal token lower than a random ranking would (mean rank {rank}), "
              "so they point away from it: {methods}.",
        "zh": "比随机还差——它们把因果词元排得比随机排序（平均排名 {rank}）还低，因此指向了别处：{methods}。"},
    "gt.reading.below_method": {"en": "{method} (top-1 {top1}, mean rank {rank})",
                                "zh": "{method}（top-1 {top1}，平均排名 {rank}）"},
    "gt.reading.random": {
        "en": "The random baseline ranks it first in {rate} [{low}–{high}], as a random ranking should (chance "
              "{chance}).",
        "zh": "随机基线把它排在第一位的比例为 {rate} [{low}–{high}]，与随机排序应有的一致（随机水平 {chance}）。"},
    "gt.reading.contrast": {
        "en": "Attention-based methods ({attention}) find the causal token in {attention_span} of examples; methods "
              "that test what the output needs ({output}) in {output_span}.",
        "zh": "基于注意力的方法（{attention}）在 {attention_span} 的样例中找到因果词元；检验输出真正需要什么的方法"
              "（{output}）为 {output_span}。"},
    "gt.reading.deceptive": {
        "en": " This model was trained to keep its attention off the causal token (Pruthi et al. 2020): the mean "
              "attention on it is {mass}{under}, yet it answers {accuracy} correctly — the attention weights show "
              "where the model did not look, not what it used.",
        "zh": "这个模型被训练成不把注意力放在因果词元上（Pruthi 等，2020）：它得到的平均注意力为 {mass}{under}，"
              "模型却答对了 {accuracy}——注意力权重显示的是模型没看哪里，而不是它用了什么。"},
    "gt.reading.under_bound": {"en": ", under the bound of {bound}", "zh": "，低于上限 {bound}"},
    "gt.reading.mechanism": {
        "en": "Found the mechanism but not the copied word: {methods} — removing an A also breaks the copy, so the "
              "A's earn credit too.",
        "zh": "找到了机制却没找到被复制的词：{methods}——移除一个 A 同样会破坏复制，所以 A 也应得到功劳。"},
    "gt.reading.mechanism_method": {"en": "{method} ranks B first in {top1} but B or one of the A's in {mechanism}",
                                    "zh": "{method} 把 B 排第一的比例为 {top1}，把 B 或某个 A 排第一的比例为"
                                    " {mechanism}"},
    "gt.reading.flipped": {
        "en": "Right token, wrong sign: {methods} — it singles the token out while saying it works against the "
              "answer.",
        "zh": "词元对了，符号反了：{methods}——它把这个词元挑了出来，却说它在反对这个答案。"},
    "gt.reading.flipped_method": {
        "en": "{method} ranks it first in {signed} by its signed score but {magnitude} by magnitude",
        "zh": "{method} 按带符号的得分把它排第一的比例为 {signed}，按绝对值则为 {magnitude}"},
    "gt.reading.head_peak": {
        "en": "Layer {layer} head {head}'s attention row peaks on the causal token in {peaks} of examples, with a "
              "mean weight of {weight} on it{ending}",
        "zh": "第 {layer} 层第 {head} 个头的注意力行在 {peaks} 的样例中峰值落在因果词元上，平均权重为 {weight}{ending"
        "}"},
    "gt.reading.faint_peak": {
        "en": " — a peak among near-zero weights that no heatmap would show: ranking first is not attending.",
        "zh": "——这是一堆近乎为零的权重中的峰值，任何热力图都显示不出来：排第一并不等于关注。"},
    "gt.reading.end": {"en": ".", "zh": "。"},
    "gt.reading.no_peak": {"en": "No head's attention row peaks on the causal token in any example.",
                           "zh": "在任何样例中，都没有哪个头的注意力行峰值落在因果词元上。"},
    "gt.reading.caution": {
        "en": "Caution: the model's accuracy here, {accuracy} [{low}–{high}], is below the {stated} its card states.",
        "zh": "注意：模型在这里的准确率 {accuracy} [{low}–{high}] 低于其模型卡声明的 {stated}。"},
    "gt.title": {"en": "Ground truth: which method finds the token that mattered?",
                 "zh": "已知答案：哪种方法能找到真正起作用的词元？"},
    "gt.progress_start": {"en": "Scoring {n} fresh examples…", "zh": "正在为 {n} 个新样例打分…"},
    "gt.progress": {"en": "Scoring example {done} of {n}…", "zh": "正在为第 {done} 个样例打分（共 {n} 个）…"},
    "gt.no_card": {"en": "{model} has no known causal token", "zh": "{model} 没有已知的因果词元"},
    "gt.needs_card": {
        "en": "This page scores attribution methods against the token that truly decided the answer, so it needs a "
              "model trained on a task whose causal token is known; {model} is not one. ",
        "zh": "本页用真正决定答案的词元来给归因方法打分，所以需要一个在因果词元已知的任务上训练的模型；{model} 不是。"},
    "gt.pick_model": {
        "en": "Pick one of the models this project trained for it:",
        "zh": "请选择本项目为此训练的模型之一："},
    "gt.none_offered": {"en": "This instance offers none of them.", "zh": "这个实例没有提供其中任何一个。"},
    "gt.intro": {
        "en": "On a real model nobody knows which token the answer truly depended on, so nobody can say which "
              "explanation method is right. Here we built the model so that we do: each example below says which "
              "token decides the answer, and every method is scored on whether it ranks that token first.",
        "zh": "在真实模型上，没人知道答案真正取决于哪个词元，所以没人能说哪种解释方法是对的。这里的模型是我们"
              "专门构造的，因此我们知道：下面每个样例都写明了哪个词元决定答案，每种方法按是否把它排在第一位来打分。"},
    "gt.fact_task": {"en": "Task: {description}", "zh": "任务：{description}"},
    "gt.fact_truth": {"en": "Causal token: {truth}.", "zh": "因果词元：{truth}。"},
    "gt.fact_bound": {"en": " (mean attention on it below {bound})", "zh": "（它得到的平均注意力低于 {bound}）"},
    "gt.fact_deceptive": {
        "en": "Variant: deceptive — trained to keep its attention off the causal token{bound} while still using it, "
              "as in Pruthi et al. 2020, “Learning to Deceive with Attention-Based Explanations”.",
        "zh": "变体：欺骗性——训练时让注意力避开因果词元{bound}，同时仍然使用它，做法同 Pruthi 等（2020）"
              "“Learning to Deceive with Attention-Based Explanations”。"},
    "gt.fact_honest": {"en": "Variant: honest — trained on the task alone.", "zh": "变体：诚实——只在任务本身上训练。"},
    "gt.fact_accuracy": {
        "en": "Accuracy at training time: {accuracy} on {examples} fresh examples (stated: at least {stated}). "
              "Trained with ",
        "zh": "训练时的准确率：在 {examples} 个新样例上为 {accuracy}（声明：至少 {stated}）。训练命令为 "},
    "gt.fact_seconds": {"en": " in {seconds} s.", "zh": "，耗时 {seconds} 秒。"},
    "gt.one_example": {"en": "One example", "zh": "单个样例"},
    "gt.seed": {"en": "Example seed", "zh": "样例种子"},
    "gt.seed_help": {"en": "Example number (generated from seed {seed} + this, fresh data the training never saw).",
                     "zh": "样例编号（由种子 {seed} + 该编号生成，是训练从未见过的新数据）。"},
    "gt.new_example": {"en": "New example", "zh": "换一个样例"},
    "gt.scoring_example": {"en": "Scoring one example with every method…", "zh": "正在用每种方法为一个样例打分…"},
    "gt.example_failed": {"en": "The example could not be scored", "zh": "无法为该样例打分"},
    "gt.correct": {"en": "✓ correct", "zh": "✓ 正确"},
    "gt.wrong": {"en": "✗ wrong", "zh": "✗ 错误"},
    "gt.answer": {
        "en": "The model answers “{predicted}” — the correct answer is “{answer}” ({verdict}; probability of the "
              "correct answer {probability}). The methods explain f = {target}.",
        "zh": "模型的回答是“{predicted}”——正确答案是“{answer}”（{verdict}；正确答案的概率 {probability}）。"
              "各方法解释的是 f = {target}。"},
    "gt.mechanism_caption": {
        "en": "B is the word the prediction copies; the two A's tell the induction head where to copy from, so a "
              "method that ranks an A first has found the mechanism without finding the copied word.",
        "zh": "B 是预测所复制的词；两个 A 告诉归纳头从哪里复制，所以把某个 A 排第一的方法找到了机制，但没找到被复制的"
        "词。"},
    "gt.open_heads": {"en": "Find the induction head on the Heads page", "zh": "在注意力头页面上找出归纳头"},
    "gt.scoreboard": {"en": "Scoreboard", "zh": "计分板"},
    "gt.examples": {"en": "Fresh examples", "zh": "新样例数"},
    "gt.examples_help": {"en": "More examples give narrower intervals and take longer.",
                         "zh": "样例越多，区间越窄，耗时也越长。"},
    "gt.k": {"en": "k of top-k", "zh": "top-k 中的 k"},
    "gt.scoring_board": {
        "en": "Scoring every method on {n} fresh examples…",
        "zh": "正在 {n} 个新样例上为每种方法打分…"},
    "gt.board_failed": {"en": "The scoreboard could not be computed", "zh": "无法计算计分板"},
    "gt.board_done": {
        "en": "{model}: {n} examples scored with {methods} methods ({seconds} s of compute when first run)",
        "zh": "{model}：已用 {methods} 种方法为 {n} 个样例打分（首次运行计算耗时 {seconds} 秒）"},
    "gt.metric_accuracy": {"en": "Model accuracy [95 %]", "zh": "模型准确率 [95%]"},
    "gt.metric_accuracy_help": {
        "en": "Share of these examples the model answers correctly, with a 95 % Wilson interval.",
        "zh": "模型答对的样例比例，附 95% Wilson 区间。"},
    "gt.metric_mass": {"en": "Mean attention on the causal token", "zh": "因果词元上的平均注意力"},
    "gt.metric_mass_help": {
        "en": "Every layer, head and query row that can see the token, averaged over the examples.",
        "zh": "所有能看到该词元的层、头和查询行，对各样例取平均。"},
    "gt.mass_interval": {"en": "95 % bootstrap interval: {low}–{high}", "zh": "95% 自助法区间：{low}–{high}"},
    "gt.metric_bound": {"en": "Attention bound it was trained under", "zh": "训练时的注意力上限"},
    "gt.bound_kept": {"en": "the mean stays under it", "zh": "平均值保持在上限以下"},
    "gt.bound_not_kept": {"en": "the mean is not clearly under it", "zh": "平均值没有明确低于上限"},
    "gt.reading": {"en": "Reading", "zh": "解读"},
    "gt.download_json": {"en": "Scoreboard (JSON)", "zh": "计分板（JSON）"},
    "gt.download_png": {"en": "Scoreboard chart (PNG)", "zh": "计分板图（PNG）"},
    "gt.column.method": {"en": "method", "zh": "方法"},
    "gt.column.rank_b": {"en": "rank of B", "zh": "B 的排名"},
    "gt.column.rank": {"en": "rank of the causal token", "zh": "因果词元的排名"},
    "gt.column.rank_of": {"en": "{rank} of {n}", "zh": "{n} 个中第 {rank}"},
    "gt.column.top_token": {"en": "top-ranked token", "zh": "排第一的词元"},
    "gt.column.hit": {"en": "hit", "zh": "命中"},
    "gt.column.mechanism": {"en": "found the mechanism", "zh": "找到机制"},
    "gt.column.top1": {"en": "top-1 [95 %]", "zh": "top-1 [95%]"},
    "gt.column.topk": {"en": "top-{k} [95 %]", "zh": "top-{k} [95%]"},
    "gt.column.mean_rank": {"en": "mean rank [95 %]", "zh": "平均排名 [95%]"},
    "gt.column.magnitude": {"en": "top-1 by magnitude [95 %]", "zh": "按绝对值的 top-1 [95%]"},
    "gt.column.mechanism_rate": {"en": "found the mechanism [95 %]", "zh": "找到机制 [95%]"},
    "gt.column.chance": {"en": "chance (a random ranking)", "zh": "随机水平（随机排序）"},
    # ---------------------------------------------------------------- hardening (issue 18)
    "share.too_long": {
        "en": "This view's link would be {length} characters, longer than the {limit} a link can carry safely "
              "(servers refuse longer ones), so none is offered. Shorten the text to share this view; the address "
              "bar keeps every other setting, but not the text.",
        "zh": "此视图的链接将长达 {length} 个字符，超过链接能安全携带的 {limit} 个字符（服务器会拒绝更长的链接），"
              "因此不提供链接。请缩短文本后再分享此视图；地址栏保留其他所有设置，但不包含文本。"},
    "sidebar.text_cut_from": {
        "en": "The paste had {length} characters; the text box holds at most {limit}, so it was cut there and only "
              "the first {limit} are analysed.",
        "zh": "粘贴的内容有 {length} 个字符；文本框最多容纳 {limit} 个字符，因此已在此处截断，只分析前 {limit} 个字符"
        "。"},
    # ---------------------------------------------------------------- compare page (issue 20)
    "nav.compare": {"en": "Compare", "zh": "对比"},
    "compare.title": {"en": "Compare: two texts or two models", "zh": "对比：两段文本或两个模型"},
    "compare.caption": {
        "en": "Which heads move a token's attention between two texts (or two models), by how much, and does the "
              "model's output move with them? Tokens are aligned; the query's two attention rows are compared in "
              "every head.",
        "zh": "两段文本（或两个模型）之间，哪些头改变了一个词元的注意力、改变了多少，模型的输出是否随之改变？"
              "先对齐词元，再在每个头中比较查询词元的两行注意力。"},
    "compare.mode": {"en": "Compare", "zh": "对比方式"},
    "compare.mode_texts": {"en": "Two texts, one model", "zh": "两段文本，一个模型"},
    "compare.mode_models": {"en": "Two models, one text", "zh": "两个模型，一段文本"},
    "compare.examples": {"en": "Example pairs", "zh": "示例对"},
    "compare.examples_placeholder": {"en": "Pick a pair of texts…", "zh": "选择一对文本…"},
    "compare.example_coreference": {"en": "Coreference: too tired / too wide", "zh": "指代：太累 / 太宽"},
    "compare.example_agreement": {"en": "Agreement: the key … is / the keys … are", "zh": "一致：单数 / 复数"},
    "compare.example_negation": {"en": "Negation: is / is not", "zh": "否定：是 / 不是"},
    "compare.text_a": {"en": "Text A (the sidebar's text)", "zh": "文本 A（即侧边栏的文本）"},
    "compare.text_b": {"en": "Text B", "zh": "文本 B"},
    "compare.text_help": {"en": "Press Ctrl+Enter or click outside the box to run.",
                          "zh": "按 Ctrl+Enter 或点击文本框外即可运行。"},
    "compare.model_a": {"en": "Model A: {model} (the sidebar's model)", "zh": "模型 A：{model}（侧边栏中的模型）"},
    "compare.model_b": {"en": "Model B", "zh": "模型 B"},
    "compare.model_b_help": {
        "en": "Heads are compared one to one, so model B needs the same layers × heads and the same tokenizer "
              "(a base model and its fine-tune).",
        "zh": "注意力头一一对应比较，所以模型 B 需要相同的层数 × 头数和相同的分词器（例如基础模型与其微调版本）。"},
    "compare.query": {"en": "Query token (whose attention row is compared)", "zh": "查询词元（比较它的注意力行）"},
    "compare.query_auto": {
        "en": "auto ({token})",
        "zh": "自动（{token}）"},
    "compare.key1": {"en": "Key 1 (attention moves from)", "zh": "键 1（注意力从这里移出）"},
    "compare.key2": {"en": "Key 2 (attention moves to)", "zh": "键 2（注意力移到这里）"},
    "compare.key_none": {"en": "none", "zh": "无"},
    "compare.keys_help": {
        "en": "Key shift = ½[(B − A) on key 2 − (B − A) on key 1]: exactly x when a mass x moves from key 1 to "
              "key 2.",
        "zh": "键转移 = ½[(B − A) 在键 2 上 − (B − A) 在键 1 上]：当 x 的注意力从键 1 移到键 2 时恰好等于 x。"},
    "compare.computing": {"en": "Running both texts through every head…", "zh": "正在让两段文本经过每个头…"},
    "compare.ran": {"en": "{model_a} / {model_b}: {n_a} and {n_b} tokens, {backend} backend, {ms} ms",
                    "zh": "{model_a} / {model_b}：{n_a} 和 {n_b} 个词元，{backend} 后端，{ms} 毫秒"},
    "compare.failed": {"en": "The comparison could not be computed", "zh": "无法完成对比"},
    "compare.alignment": {"en": "Aligned tokens", "zh": "对齐后的词元"},
    "compare.alignment_caption": {
        "en": "= same token in both, ~ replaced (the slot is still compared), + only in this text (its attention "
              "goes to the “other” bucket).",
        "zh": "= 两边相同，~ 被替换（该位置仍参与比较），+ 只在这段文本中出现（它得到的注意力计入“其他”项）。"},
    "compare.identical": {"en": "The two inputs are identical: every difference below is 0.",
                          "zh": "两个输入完全相同：下面的每个差异都是 0。"},
    "compare.summary": {"en": "In one sentence", "zh": "一句话总结"},
    "compare.metric_moved": {"en": "Heads that moved", "zh": "发生变化的头"},
    "compare.metric_moved_help": {
        "en": "With two keys: key shift above {shift}. Without: JS divergence above {js} nats.",
        "zh": "有两个键时：键转移大于 {shift}。没有键时：JS 散度大于 {js} 奈特。"},
    "compare.metric_output": {"en": "Output change", "zh": "输出变化"},
    "compare.metric_top": {"en": "Top prediction A → B", "zh": "首选预测 A → B"},
    "compare.ranked": {"en": "Heads ranked by how far the query's attention moved",
                       "zh": "按查询词元注意力变化大小排序的头"},
    "compare.grid": {"en": "Every head: click a cell to show its two heatmaps",
                     "zh": "所有头：点击一个格子查看它的两张热力图"},
    "compare.colour_by": {"en": "Colour by", "zh": "着色依据"},
    "compare.colour_js": {"en": "JS divergence", "zh": "JS 散度"},
    "compare.colour_shift": {"en": "Key shift", "zh": "键转移"},
    "compare.colour_entropy": {"en": "Entropy change", "zh": "熵变化"},
    "compare.pair": {"en": "Layer {layer}, head {head}: text A, text B and B − A",
                     "zh": "第 {layer} 层第 {head} 个头：文本 A、文本 B 和 B − A"},
    "compare.pair_caption": {
        "en": "The query's row is outlined. B − A is drawn on the aligned tokens only (a replaced slot counts as "
              "one token); red = more attention in B, blue = more in A.",
        "zh": "查询词元所在的行已用框标出。B − A 只画在对齐的词元上（被替换的位置算作一个词元）；"
              "红色 = B 中注意力更多，蓝色 = A 中更多。"},
    "compare.loo_button": {"en": "Leave-one-out on both texts (does the output need the tokens that moved?)",
                           "zh": "对两段文本做逐一删除（输出是否需要注意力移动到的词元？）"},
    "compare.loo_running": {
        "en": "Removing each token in turn, in both texts…",
        "zh": "正在两段文本中依次移除每个词元…"},
    "compare.loo_caption": {
        "en": "The Attribution page's occlusion: f(x) − f(x with the token replaced by [MASK]), f = {target}. "
              "Attention says where a head read; this says what the output needed.",
        "zh": "与归因页面相同的遮挡法：f(x) − f(把该词元换成 [MASK] 后的 x)，f = {target}。"
              "注意力说明头读了哪里；这里说明输出需要什么。"},
    "compare.download": {"en": "Numbers (JSON)", "zh": "数据（JSON）"},
    "compare.server_time": {"en": "Server time for this view: {ms} ms", "zh": "本视图的服务器耗时：{ms} 毫秒"},
    "compare.sentence": {"en": "{attention}; {output}", "zh": "{attention}；{output}"},
    "compare.sentence_keys": {
        "en": "In {moved} of {total} heads “{query}” moves more than half of its attention from “{key1}” to "
              "“{key2}” (most: layer {layer}, head {head}, {shift})",
        "zh": "在 {total} 个头中，有 {moved} 个头里“{query}”把一半以上的注意力从“{key1}”移到了“{key2}”"
              "（最多的是第 {layer} 层第 {head} 个头，{shift}）"},
    "compare.sentence_js": {
        "en": "The attention of “{query}” moves most in layer {layer}, head {head} (Jensen–Shannon divergence {js} "
              "nats, at most 0.693); {moved} of {total} heads move by more than {threshold} nats",
        "zh": "“{query}”的注意力在第 {layer} 层第 {head} 个头变化最大（Jensen–Shannon 散度 {js} 奈特，最大 0.693）；"
              "{total} 个头中有 {moved} 个变化超过 {threshold} 奈特"},
    "compare.sentence_output_embedding": {"en": "the sentence embedding moves by {change} (cosine distance).",
                                          "zh": "句向量移动了 {change}（余弦距离）。"},
    "compare.sentence_output_distribution": {
        "en": "the predicted-token distribution moves by {change} nats (KL); the top prediction goes from “{top_a}” "
              "to “{top_b}”, and the probability of “{top_a}” changes by {delta}.",
        "zh": "预测词元分布变化 {change} 奈特（KL）；首选预测从“{top_a}”变为“{top_b}”，“{top_a}”的概率变化 {delta}。"},
    "compare.sentence_output_logits": {
        "en": "the largest class logit moves by {change}; the top class goes from “{top_a}” to “{top_b}”, and the "
              "probability of “{top_a}” changes by {delta}.",
        "zh": "类别 logit 最大变化 {change}；首选类别从“{top_a}”变为“{top_b}”，“{top_a}”的概率变化 {delta}。"},
    "compare.sentence_output_none": {"en": "the two outputs cannot be compared (different vocabularies or labels).",
                                     "zh": "两个输出无法比较（词表或类别不同）。"},
    # ---------------------------------------------------------------- census (issue 16)
    "census.report_measured": {
        "en": "Census of {texts} texts ({tokens} tokens) of {model}; {errors} rows could not be measured (see "
              "errors.jsonl). Numbers are means over the texts with 95% intervals. Thresholds: collapsed = normalised "
              "entropy < {collapsed}, diffuse = normalised entropy > {diffuse}, sink = a key's sink score > {sink} "
              "(Gu et al. 2024).",
        "zh": "{model} 的普查：{texts} 条文本（{tokens} 个词元）；{errors} 行无法测量（见 errors.jsonl）。数值为各文"
        "本的"
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
    "chart.thinned.token": {"en": "In a narrow column only every k-th token is labelled; hover a cell for its token.",
                            "zh": "栏太窄时只标出每隔 k 个的词元；把鼠标移到格子上可看它的词元。"},
    "chart.thinned.head": {"en": "In a narrow column only every k-th head is labelled; hover a cell for its head.",
                           "zh": "栏太窄时只标出每隔 k 个的注意力头；把鼠标移到格子上可看它是哪个头。"},
    "unknown.warning": {
        "en": "{model} cannot read this text: {unknown} of its {total} tokens ({share}) are unknown to it ([UNK]), "
              "more than {limit}. Every unknown token looks the same to the model, so its attention here says little "
              "about the text. Models that read {script}: {models}.",
        "zh": "{model} 读不懂这段文本：{total} 个词元中有 {unknown} 个（{share}）是它不认识的 [UNK]，超过了 {limit}。"
              "每个未知词元在模型看来都一样，所以这里的注意力几乎说明不了这段文本。能读{script}的模型：{models}。"},
    "unknown.script.han": {"en": "Chinese", "zh": "中文"},
    "unknown.script.kana": {"en": "Japanese", "zh": "日文"},
    "unknown.script.hangul": {"en": "Korean", "zh": "韩文"},
    "unknown.script.other": {"en": "this script", "zh": "这种文字"},
    "unknown.sidebar_hint": {"en": "Choose one under “Model” in the sidebar, or type its hub id under “Other”.",
                             "zh": "在侧栏的“模型”中选择一个，或在“其他”中输入它的 hub id。"},
    "lesson3.answer.absolute.none": {
        "en": "This model adds learned absolute position embeddings to X, so every projection sees position. In "
              "layer {layer}, no head puts more than {threshold} of its weight on one offset. The most positional "
              "head is {top_head}, with {top_weight} at i − j = {top_offset}.",
        "zh": "这个模型把学到的绝对位置编码加到 X 上，因此每个投影都能看到位置。在第 {layer} 层，没有哪个头把超过 "
              "{threshold} 的权重放在同一个偏移上。位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 "
              "{top_weight}。"},
    "lesson3.answer.rope.none": {
        "en": "This model uses rotary embeddings (RoPE): position rotates Q and K only, so the scores depend on the "
              "offset i − j and V carries none. In layer {layer}, no head puts more than {threshold} of its weight "
              "on one offset. The most positional head is {top_head}, with {top_weight} at i − j = {top_offset}.",
        "zh": "这个模型使用旋转位置编码（RoPE）：位置只旋转 Q 和 K，因此得分取决于偏移 i − j，V 不带位置。"
              "在第 {layer} 层，没有哪个头把超过 {threshold} 的权重放在同一个偏移上。"
              "位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 {top_weight}。"},
    "lesson3.answer.relative.none": {
        "en": "This model uses relative position scores inside attention. In layer {layer}, no head puts more than "
              "{threshold} of its weight on one offset. The most positional head is {top_head}, with {top_weight} "
              "at i − j = {top_offset}.",
        "zh": "这个模型在注意力内部使用相对位置得分。在第 {layer} 层，没有哪个头把超过 {threshold} 的权重放在同一个"
              "偏移上。位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 {top_weight}。"},
    "lesson3.answer.unknown.none": {
        "en": "The inspector cannot tell how this model encodes position. In layer {layer}, no head puts more than "
              "{threshold} of its weight on one offset. The most positional head is {top_head}, with {top_weight} "
              "at i − j = {top_offset}.",
        "zh": "检查器无法判断这个模型如何编码位置。在第 {layer} 层，没有哪个头把超过 {threshold} 的权重放在同一个"
              "偏移上。位置性最强的是第 {top_head} 个头，在 i − j = {top_offset} 处权重为 {top_weight}。"},
    "lesson7.not_measured": {"en": "not measured on {device}", "zh": "{device} 上未测量"},
    "lesson8.locked": {"en": "Answered: the guess is locked and counted once. Pick another query token for a new "
                             "question.",
                       "zh": "已作答：猜测已锁定，只计一次分。换一个查询词元即可开始新的一题。"},
    "lesson8.importance_locked": {"en": "Answered for this text: the guess is locked and counted once.",
                                  "zh": "这段文本已作答：猜测已锁定，只计一次分。"},
    "attribution.computing": {"en": "Computing every attribution method — the first run on a text takes a while…",
                              "zh": "正在计算每种归因方法——一段文本第一次运行需要一些时间…"},
    "heads.more_lines": {"en": "The other {count} heads", "zh": "其余 {count} 个头"},
    "inspect.title": {"en": "Attention Inspector", "zh": "注意力检查器"},
    "inspect.model_facts": {
        "en": "{architecture} · {layers} layers × {heads} heads · head size {head_dim} · up to {positions} tokens",
        "zh": "{architecture} · {layers} 层 × {heads} 个头 · 头维度 {head_dim} · 最多 {positions} 个词元"},
    "export.unknown_model": {"en": "unknown model", "zh": "未知模型"},
    "export.layer_head": {"en": "layer {layer}, head {head}", "zh": "第 {layer} 层第 {head} 个头"},
    "export.layer": {"en": "layer {layer}", "zh": "第 {layer} 层"},
    "export.head": {"en": "head {head}", "zh": "第 {head} 个头"},
    "export.backend": {"en": "backend {backend}", "zh": "后端 {backend}"},
    "example.01-animal-street": {"en": "Coreference: what is “it”?", "zh": "指代：“it”指的是什么？"},
    "example.02-coreference": {"en": "Coreference: the trophy and the suitcase", "zh": "指代：奖杯和手提箱"},
    "example.03-agreement": {"en": "Subject–verb agreement across a long gap", "zh": "长距离的主谓一致"},
    "example.04-chinese": {"en": "Chinese — needs a model that reads it (bert-base-chinese or Qwen2.5)",
                           "zh": "中文——需要能读中文的模型（bert-base-chinese 或 Qwen2.5）"},
    "example.05-code": {"en": "Python code", "zh": "Python 代码"},
    "attribution.page.title": {"en": "Attribution: is attention an explanation?", "zh": "归因：注意力是解释吗？"},
    "attribution.page.caption": {
        "en": "Attention weights say where a head read from. Whether the output needed those tokens is a different "
              "question; here every method answers it for one number f computed from your text, and the page "
              "measures how much they agree, how faithful each is, and how much the attention can change with f "
              "unchanged.",
        "zh": "注意力权重说明一个头从哪里读取信息。输出是否真的需要这些词元是另一个问题；这里每种方法都针对由你的文本"
              "算出的一个数 f 来回答它，本页衡量这些方法彼此有多一致、各自有多忠实，以及在 f 不变时注意力能改变多少。"},
    "attribution.page.settings": {"en": "What f is, and what the layer-local methods read",
                                  "zh": "f 是什么，以及逐层方法读取哪里"},
    "attribution.page.reference": {"en": "Reference sentence", "zh": "参考句子"},
    "attribution.page.reference_help": {"en": "f = cosine similarity with this sentence's embedding",
                                        "zh": "f = 与这个句子嵌入的余弦相似度"},
    "attribution.page.target_token": {"en": "Target token (empty: the model's top prediction)",
                                      "zh": "目标词元（留空：模型的首选预测）"},
    "attribution.page.class": {"en": "Class", "zh": "类别"},
    "attribution.page.predicted_class": {"en": "predicted class", "zh": "预测的类别"},
    "attribution.page.mean_over_heads": {"en": "mean over heads", "zh": "各头平均"},
    "attribution.page.query": {"en": "Query row", "zh": "查询行"},
    "attribution.page.query_help": {
        "en": "auto: the predicted token's row for language models, else the last token of a decoder or the first "
              "([CLS]) of an encoder",
        "zh": "auto：语言模型取被预测词元所在的行，否则解码器取最后一个词元，编码器取第一个词元（[CLS]）"},
    "attribution.page.query_auto": {"en": "auto", "zh": "自动"},
    "attribution.page.query_first": {"en": "first", "zh": "第一个"},
    "attribution.page.query_last": {"en": "last", "zh": "最后一个"},
    "attribution.page.query_index_option": {"en": "index…", "zh": "指定位置…"},
    "attribution.page.query_index": {"en": "Query token index", "zh": "查询词元的位置"},
    "attribution.page.removal": {"en": "Removal (occlusion and ERASER)", "zh": "移除方式（遮挡和 ERASER）"},
    "attribution.page.removal_mask": {"en": "replace by [MASK]", "zh": "替换为 [MASK]"},
    "attribution.page.removal_delete": {"en": "delete", "zh": "删除"},
    "attribution.page.ig_steps": {"en": "Integrated-gradients steps", "zh": "积分梯度步数"},
    "attribution.page.words_help": {"en": "A word's score = sum over its pieces.",
                                    "zh": "一个词的得分 = 其各子词得分之和。"},
    "attribution.page.long_toggle": {"en": "Run every method on all {n} tokens (slow)",
                                     "zh": "在全部 {n} 个词元上运行每种方法（较慢）"},
    "attribution.page.long_info": {
        "en": "The text has {n} tokens. Occlusion, value zeroing and ERASER run about one forward per token and per "
              "removal, so past {limit} tokens the page asks first; turn on the toggle above, or shorten the text.",
        "zh": "这段文本有 {n} 个词元。遮挡、值置零和 ERASER 大约每个词元、每次移除都要做一次前向计算，所以超过 {limit} "
              "个词元时本页会先询问；请打开上方的开关，或缩短文本。"},
    "attribution.page.status_computing": {
        "en": "Computing every method, agreement and faithfulness (gradients, integrated gradients, occlusion, "
              "ERASER removals)…",
        "zh": "正在计算每种方法、一致性和忠实度（梯度、积分梯度、遮挡、ERASER 移除）…"},
    "attribution.page.failed": {"en": "The attribution could not be computed", "zh": "无法计算归因"},
    "attribution.page.done": {"en": "Attributed f on {n} tokens with {methods} methods ({seconds} s of compute when "
                                    "first run)",
                              "zh": "已用 {methods} 种方法在 {n} 个词元上对 f 做归因（首次运行计算耗时 {seconds} 秒）"},
    "attribution.page.target": {"en": "The target f(x)", "zh": "目标 f(x)"},
    "attribution.page.target_value": {"en": "f(x) = {value}: {description}.", "zh": "f(x) = {value}：{description}。"},
    "attribution.page.target_predicted": {"en": " (its prediction)", "zh": "（即它的预测）"},
    "attribution.page.target_class": {"en": "the probability the classifier gives class “{label}”{predicted}",
                                      "zh": "分类器给类别“{label}”的概率{predicted}"},
    "attribution.page.target_masked_token": {"en": "the log-probability of “{token}” at the [MASK]{predicted}",
                                             "zh": "[MASK] 处“{token}”的对数概率{predicted}"},
    "attribution.page.target_next_token": {
        "en": "the log-probability of “{token}” as the next token after the text{predicted}",
        "zh": "“{token}”作为文本后下一个词元的对数概率{predicted}"},
    "attribution.page.target_similarity": {
        "en": "the cosine similarity between the text's sentence embedding (mean of the last layer over its tokens) "
              "and that of the reference “{reference}”",
        "zh": "文本的句子嵌入（最后一层在各词元上的平均）与参考句子“{reference}”的句子嵌入之间的余弦相似度"},
    "attribution.page.ig_caption": {
        "en": "Integrated gradients: {steps} steps ({batch} per batch), baseline = {baseline} (f = {baseline_value}); "
              "convergence delta {delta} (Σ attributions − (f(x) − f(baseline))).",
        "zh": "积分梯度：{steps} 步（每批 {batch} 步），基线 = {baseline}（f = {baseline_value}）；收敛误差 {delta}"
              "（Σ 归因 − (f(x) − f(基线))）。"},
    "attribution.page.baseline_pad": {
        "en": "every non-special token's embedding replaced by the [PAD] embedding; special tokens kept",
        "zh": "每个非特殊词元的嵌入替换为 [PAD] 的嵌入；特殊词元保留"},
    "attribution.page.baseline_zeros": {
        "en": "every non-special token's embedding replaced by zeros (no pad token); special tokens kept",
        "zh": "每个非特殊词元的嵌入替换为零向量（没有填充词元）；特殊词元保留"},
    "attribution.page.skipped": {"en": "{method} could not run: {reason}", "zh": "{method} 无法运行：{reason}"},
    "attribution.page.scores": {"en": "Per-token scores", "zh": "每个词元的得分"},
    "attribution.page.read_mean": {"en": "the mean over heads", "zh": "各头平均"},
    "attribution.page.read_head": {"en": "head {head}", "zh": "第 {head} 个头"},
    "attribution.page.scores_caption": {
        "en": "Layer-local methods read layer {layer}, {head}, query row {query} (“{token}”). Signed methods: blue "
              "supports f, red works against it.",
        "zh": "逐层方法读取第 {layer} 层、{head}、查询行 {query}（“{token}”）。"
              "有正负号的方法：蓝色支持 f，红色与之相反。"},
    "attribution.page.agreement": {"en": "Agreement", "zh": "一致性"},
    "attribution.page.measure": {"en": "Measure", "zh": "度量"},
    "attribution.page.overlap": {"en": "top-{k} overlap", "zh": "前 {k} 重合度"},
    "attribution.page.agreement_subtitle": {
        "en": "Over the {n} content tokens. Two random rankings give τ in [{low}, {high}] 95% of the time.",
        "zh": "基于 {n} 个内容词元。两个随机排序有 95% 的概率给出 [{low}, {high}] 内的 τ。"},
    "attribution.page.corpus_button": {"en": "Agreement over the example texts, with bootstrap intervals",
                                       "zh": "在示例文本上计算一致性（含自助法区间）"},
    "attribution.page.corpus_spinner": {"en": "Attributing every example text…", "zh": "正在对每段示例文本做归因…"},
    "attribution.page.corpus_subtitle": {"en": "Mean over {n} example texts.", "zh": "{n} 段示例文本的平均。"},
    "attribution.page.column_method": {"en": "method", "zh": "方法"},
    "attribution.page.column_vs": {"en": "vs", "zh": "对比"},
    "attribution.page.column_mean": {"en": "mean τ", "zh": "平均 τ"},
    "attribution.page.column_low": {"en": "95% low", "zh": "95% 下限"},
    "attribution.page.column_high": {"en": "95% high", "zh": "95% 上限"},
    "attribution.page.faithfulness": {"en": "Faithfulness (ERASER)", "zh": "忠实度（ERASER）"},
    "attribution.page.removed_mask": {"en": "replaced by {replacement}", "zh": "替换为 {replacement}"},
    "attribution.page.removed_delete": {"en": "deleted", "zh": "删除"},
    "attribution.page.faithfulness_caption": {
        "en": "Comprehensiveness f(x) − f(x without the top tokens) — higher is better; sufficiency f(x) − f(only the "
              "top tokens) — lower is better; bins {bins} of the content tokens, removed tokens {removed}; AOPC = the "
              "mean over bins. Flip: {flip}.",
        "zh": "全面性 f(x) − f(去掉排名靠前的词元后的 x)——越高越好；充分性 f(x) − f(只保留排名靠前的词元)——越低越好；"
              "分档为内容词元的 {bins}，被移除的词元{removed}；AOPC = 各档的平均。翻转：{flip}。"},
    "attribution.page.eraser_method": {"en": "method", "zh": "方法"},
    "attribution.page.eraser_comp": {"en": "AOPC comprehensiveness ↑", "zh": "AOPC 全面性 ↑"},
    "attribution.page.eraser_suff": {"en": "AOPC sufficiency ↓", "zh": "AOPC 充分性 ↓"},
    "attribution.page.eraser_flip": {"en": "flip at (fraction removed)", "zh": "翻转点（移除比例）"},
    "attribution.page.eraser_comp_bin": {"en": "comp. {bin}", "zh": "全面性 {bin}"},
    "attribution.page.eraser_suff_bin": {"en": "suff. {bin}", "zh": "充分性 {bin}"},
    "attribution.page.counterfactual": {"en": "Counterfactual attention", "zh": "反事实注意力"},
    "attribution.page.adversarial_button": {
        "en": "Run the adversarial search (5 candidates, Adam lr 0.01, up to 500 steps)",
        "zh": "运行对抗搜索（5 个候选，Adam 学习率 0.01，最多 500 步）"},
    "attribution.page.adversarial_progress": {"en": "adversarial search…", "zh": "对抗搜索中…"},
    "attribution.page.adversarial_progress_at": {"en": "adversarial search: {percent}", "zh": "对抗搜索：{percent}"},
    "attribution.page.uniform_metric": {"en": "Uniform row: |Δf|", "zh": "均匀行：|Δf|"},
    "attribution.page.uniform_help": {"en": "JSD {jsd} nats", "zh": "JSD {jsd} 奈特"},
    "attribution.page.permutation_metric": {"en": "{n} permutations: median |Δf|", "zh": "{n} 次置换：|Δf| 中位数"},
    "attribution.page.permutation_help": {"en": "largest weight in the row {weight}", "zh": "该行最大权重 {weight}"},
    "attribution.page.adversarial_metric": {"en": "Adversarial row: JSD (nats)", "zh": "对抗行：JSD（奈特）"},
    "attribution.page.adversarial_help": {"en": "|Δf| {change} ≤ ε = {epsilon}, {steps} steps, {seconds} s",
                                          "zh": "|Δf| {change} ≤ ε = {epsilon}，{steps} 步，{seconds} 秒"},
    "heads.corpus_progress": {
        "en": "{percent} done: {done} of {n} texts' worth measured, {rate} texts/s, about {eta} s left",
        "zh": "已完成 {percent}：已测量相当于 {n} 段文本中的 {done} 段，每秒 {rate} 段，约剩 {eta} 秒"},
    "heads.corpus_stop": {"en": "Stop the corpus report", "zh": "停止语料库报告"},
    "heads.corpus_stopped": {"en": "Stopped after {done} of {n} texts. Nothing is shown for a stopped run.",
                             "zh": "已在 {n} 段文本中的第 {done} 段后停止。停止的运行不显示结果。"},
    "heads.corpus_run_again": {"en": "Run the corpus report again", "zh": "重新运行语料库报告"},
    "heads.corpus_done": {"en": "{model}: {n} text(s) in {seconds} s ({rate} texts/s), {backend} backend",
                          "zh": "{model}：{n} 段文本，耗时 {seconds} 秒（每秒 {rate} 段），{backend} 后端"},
    # Model menus (views/inputs.py): the labels of the suggested models; the options (the specs) never change.
    "model.bundled": {"en": "all-MiniLM-L6-v2 (bundled)", "zh": "all-MiniLM-L6-v2（内置）"},
    "model.bert_base": {"en": "bert-base-uncased (hub)", "zh": "bert-base-uncased（Hub 模型）"},
    "model.distilbert": {"en": "distilbert-base-uncased (hub)", "zh": "distilbert-base-uncased（Hub 模型）"},
    "model.gpt2": {"en": "gpt2 (hub)", "zh": "gpt2（Hub 模型）"},
    "model.smollm2": {"en": "SmolLM2-135M, Llama-style with RoPE and GQA (hub)",
                      "zh": "SmolLM2-135M，Llama 式，含 RoPE 与 GQA（Hub 模型）"},
    "model.bert_chinese": {"en": "bert-base-chinese, reads Chinese (hub)",
                           "zh": "bert-base-chinese，能读中文（Hub 模型）"},
    "model.qwen": {"en": "Qwen2.5-0.5B, Llama-style, reads Chinese and other languages (hub)",
                   "zh": "Qwen2.5-0.5B，Llama 式，能读中文等多种语言（Hub 模型）"},
    "model.other": {"en": "Other: a hub id or a local folder…", "zh": "其他：Hub id 或本地文件夹…"},
    "model.other_placeholder": {"en": "org/name or /path/to/model", "zh": "org/name 或本地文件夹路径"},
    # A shipped model in a menu, short enough for the sidebar (English keeps the model card's own label).
    "model.ground_truth": {"en": "{name} (ground truth)", "zh": "真值：{name}"},
    "lesson8.guess_placeholder": {"en": "Choose a token…", "zh": "选择一个词元…"},
    "lesson7.lengths_placeholder": {"en": "Choose lengths…", "zh": "选择长度…"},
    "lesson5.step.split": {"en": "split", "zh": "拆分成多头"},
    "lesson5.step.concat": {"en": "concat · W_O", "zh": "拼接 · W_O"},
    # Ground truth metrics, short enough for three in a row at 1000 px; the full wording is in their help.
    "gt.metric_accuracy_short": {"en": "Model accuracy", "zh": "模型准确率"},
    "gt.accuracy_interval": {"en": "95 % Wilson interval: {low}–{high}", "zh": "95% Wilson 区间：{low}–{high}"},
    "gt.metric_mass_short": {"en": "Causal-token weight", "zh": "因果词元注意力"},
    "gt.metric_bound_short": {"en": "Attention bound", "zh": "注意力上限"},
    "compare.query_help": {"en": "“auto” is the first token where the two texts differ.",
                           "zh": "“自动”即两段文本中第一个不同的词元。"},
    "lesson4.jacobian_help": {
        "en": "The Frobenius norm of the softmax's Jacobian: how much the weights still move when the scores do "
              "(near 0: saturated, almost no gradient).",
        "zh": "softmax 雅可比矩阵的 Frobenius 范数：得分变化时权重还能变化多少（接近 0：已饱和，几乎没有梯度）。"},
    # ------------------------------------------------------------- chart text: Inspect, Heads, census folder (issue 17)
    # Axis, legend and tooltip words shared by the Inspect, Heads and census charts.
    "chart.inspect.layer": {"en": "layer", "zh": "层"},
    "chart.inspect.entropy_per_log_keys": {"en": "entropy / log(keys)", "zh": "熵 / log(键数)"},
    "chart.inspect.entropy_nats": {"en": "entropy (nats)", "zh": "熵（奈特）"},
    "chart.inspect.entropy_normalised": {"en": "entropy (normalised)", "zh": "熵（归一化）"},
    "chart.inspect.grid_title": {"en": "Head entropy: how spread out each head's attention is",
                                 "zh": "各头的熵：每个头的注意力有多分散"},
    "chart.inspect.grid_click": {"en": "Click a cell to show that head.", "zh": "点击格子即可显示该头。"},
    "chart.inspect.key_axis": {"en": "key (attended to)", "zh": "键（被关注的词元）"},
    "chart.inspect.query_axis": {"en": "query (attending)", "zh": "查询（发出关注的词元）"},
    "chart.inspect.weight": {"en": "weight", "zh": "权重"},
    "chart.inspect.query_token": {"en": "query token", "zh": "查询词元"},
    "chart.inspect.key_token": {"en": "key token", "zh": "键词元"},
    "chart.inspect.heatmap_title": {"en": "Layer {layer}, head {head}: attention weights",
                                    "zh": "第 {layer} 层第 {head} 个头：注意力权重"},
    "chart.inspect.head_header": {"en": "head {head}", "zh": "第 {head} 个头"},
    "chart.inspect.layer_heads_title": {"en": "Layer {layer}: every head", "zh": "第 {layer} 层：所有头"},
    "chart.inspect.layer_depth": {"en": "layer (input → output)", "zh": "层（输入 → 输出）"},
    "chart.inspect.layer_mean": {"en": "layer mean", "zh": "层平均值"},
    "chart.inspect.by_layer_title": {"en": "Entropy by layer: does attention sharpen with depth?",
                                     "zh": "逐层的熵：注意力是否随深度变得集中？"},
    "chart.inspect.by_layer_note": {"en": "Dots: each head (0 = one key, 1 = uniform). Line: the layer's mean.",
                                    "zh": "点：每个头（0 = 只看一个键，1 = 均匀分布）。线：该层的平均值。"},
    "chart.heads.metric.entropy": {"en": "normalised entropy", "zh": "归一化熵"},
    "chart.heads.metric.sink": {"en": "largest sink score", "zh": "最大汇点得分"},
    "chart.heads.metric.induction": {"en": "induction score (Olsson et al.)", "zh": "归纳得分（Olsson 等）"},
    "chart.heads.metric.ablation": {"en": "importance: output change when ablated", "zh": "重要性：消融后输出的变化"},
    "chart.heads.metric.gradient": {"en": "importance: gradient score (Michel)", "zh": "重要性：梯度得分（Michel）"},
    "chart.heads.ablation_change": {"en": "ablation change ({measure})", "zh": "消融带来的变化（{measure}）"},
    "chart.heads.gradient_importance": {"en": "gradient importance (layer-normalised)",
                                        "zh": "梯度重要性（按层归一化）"},
    "chart.heads.distance": {"en": "mean attention distance (tokens)", "zh": "平均注意力距离（词元）"},
    "chart.heads.health_flag": {"en": "health flag", "zh": "健康标记"},
    "chart.heads.flag.collapsed": {"en": "collapsed", "zh": "坍缩"},
    "chart.heads.flag.diffuse": {"en": "diffuse", "zh": "弥散"},
    # The one-character marks drawn on collapsed and diffuse heads (the grids' subtitles say what they mean).
    "chart.heads.mark.collapsed": {"en": "C", "zh": "坍"},
    "chart.heads.mark.diffuse": {"en": "D", "zh": "弥"},
    "chart.heads.no_induction": {"en": "none (no token repeats)", "zh": "无（没有重复的词元）"},
    "chart.heads.grid_title": {"en": "Heads coloured by {legend}", "zh": "按“{legend}”着色的各头"},
    "chart.heads.grid_note": {
        "en": "C = collapsed, D = diffuse. Grey = no value. Click a head to open it on the Inspect page.",
        "zh": "坍 = 坍缩，弥 = 弥散。灰色 = 无数值。点击一个头即可在“查看”页打开它。"},
    "chart.heads.clustered_note": {"en": "Heads in clustered order (average linkage): similar heads sit together.",
                                   "zh": "各头按聚类顺序排列（平均连接法）：相似的头排在一起。"},
    "chart.heads.other_head": {"en": "other head", "zh": "另一个头"},
    "chart.heads.js_title": {"en": "Jensen–Shannon divergence between heads", "zh": "各头之间的 Jensen–Shannon 散度"},
    "chart.heads.js_legend": {"en": "JS divergence (nats)", "zh": "JS 散度（奈特）"},
    "chart.heads.cka_title": {"en": "What heads write: linear CKA", "zh": "各头写入的内容：线性 CKA"},
    "chart.heads.cka_legend": {"en": "CKA of residual contributions", "zh": "残差贡献的 CKA"},
    "chart.heads.mds_axis": {"en": "MDS axis {axis}", "zh": "多维缩放第 {axis} 轴"},
    "chart.heads.mds_title": {"en": "Map of the heads (classical MDS of the JS divergence)",
                              "zh": "各头的分布图（对 JS 散度做经典多维缩放）"},
    "chart.heads.mds_note": {"en": "Close points attend alike (Clark et al. 2019, figure 6).",
                             "zh": "靠得近的点关注方式相似（Clark 等，2019，图 6）。"},
    "chart.heads.removed_axis": {"en": "share of heads removed (least important first)",
                                 "zh": "移除的头所占比例（从最不重要的开始）"},
    "chart.heads.heads_removed": {"en": "heads removed", "zh": "已移除的头数"},
    "chart.heads.fraction": {"en": "fraction", "zh": "比例"},
    "chart.heads.pruning_title": {"en": "Pruning curve: how far the output moves as heads are removed",
                                  "zh": "剪枝曲线：随着头被移除，输出偏离多远"},
    "chart.heads.pruning_note": {
        "en": "Order: Michel et al.'s gradient importance; removal: {mode} ablation. 0 = the unpruned output.",
        "zh": "顺序：Michel 等人的梯度重要性；移除方式：{mode}消融。0 = 未剪枝时的输出。"},
    # An exported chart's provenance caption quotes its input text; a corpus run has many, so it names them.
    "chart.heads.corpus_text": {"en": "corpus of {n} texts", "zh": "语料库中的 {n} 段文本"},
    # Census statistics by their names in inspector.analyses.census.STATISTICS (English: the name with spaces).
    "chart.census.stat.entropy": {"en": "entropy", "zh": "熵"},
    "chart.census.stat.entropy_normalized": {"en": "entropy normalized", "zh": "归一化熵"},
    "chart.census.stat.first_token_sink": {"en": "first token sink", "zh": "第一个词元的汇点得分"},
    "chart.census.stat.max_sink_score": {"en": "max sink score", "zh": "最大汇点得分"},
    "chart.census.stat.mass_cls": {"en": "mass cls", "zh": "[CLS] 的注意力比例"},
    "chart.census.stat.mass_sep": {"en": "mass sep", "zh": "[SEP] 的注意力比例"},
    "chart.census.stat.mass_punctuation": {"en": "mass punctuation", "zh": "标点的注意力比例"},
    "chart.census.stat.mass_self": {"en": "mass self", "zh": "自身的注意力比例"},
    "chart.census.stat.mass_previous": {"en": "mass previous", "zh": "前一个词元的注意力比例"},
    "chart.census.stat.mass_next": {"en": "mass next", "zh": "后一个词元的注意力比例"},
    "chart.census.stat.mean_distance": {"en": "mean distance", "zh": "平均距离"},
    # Units by statistic (inspector.analyses.census.STATISTIC_UNITS); every other statistic is a share of the attention.
    "chart.census.unit.entropy": {"en": "nats", "zh": "奈特"},
    "chart.census.unit.entropy_normalized": {"en": "entropy / log(visible keys)", "zh": "熵 / log(可见键数)"},
    "chart.census.unit.mean_distance": {"en": "tokens", "zh": "词元"},
    "chart.census.unit.share": {"en": "share", "zh": "比例"},
    "chart.census.legend": {"en": "{statistic} ({unit}), mean over texts",
                            "zh": "{statistic}（{unit}），各文本的平均值"},
    "chart.census.title": {"en": "Census: {statistic} over {texts} texts",
                           "zh": "普查：{texts} 条文本上的{statistic}"},
    "chart.census.note": {"en": "C = collapsed, D = diffuse (Heads page thresholds). Grey = no value.",
                          "zh": "坍 = 坍缩，弥 = 弥散（按“注意力头”页的阈值）。灰色 = 无数值。"},
    "chart.census.mean": {"en": "mean", "zh": "平均值"},
    "chart.census.low": {"en": "95% interval, low", "zh": "95% 区间下限"},
    "chart.census.high": {"en": "95% interval, high", "zh": "95% 区间上限"},
    "chart.census.texts": {"en": "texts", "zh": "文本数"},
    # census_table's columns as the Heads page's table shows them.
    "chart.census.column.name": {"en": "name", "zh": "名称"},
    "chart.census.column.low": {"en": "low", "zh": "下限"},
    "chart.census.column.high": {"en": "high", "zh": "上限"},
    "chart.census.column.flag": {"en": "flag", "zh": "标记"},
    # ----------------------------------------------------------------- chart text: Attribution, Ground truth (issue 17)
    "chart.attribution.token": {"en": "token", "zh": "词元"},
    "chart.attribution.word": {"en": "word", "zh": "词"},
    "chart.attribution.layer": {"en": "layer", "zh": "层"},
    "chart.attribution.score": {"en": "score", "zh": "得分"},
    "chart.attribution.relative": {"en": "relative", "zh": "相对值"},
    "chart.attribution.relative_legend": {"en": "score / max |score|", "zh": "得分 / 最大 |得分|"},
    "chart.attribution.scores_title": {"en": "Which tokens each method says f depends on",
                                       "zh": "各方法认为 f 依赖哪些词元"},
    "chart.attribution.scores_note": {
        "en": "Each row scaled to its own largest |score|; grey: cannot be scored (special tokens).",
        "zh": "每行按它自己最大的 |得分| 缩放；灰色：无法打分（特殊词元）。"},
    "chart.attribution.agreement_title": {"en": "Agreement between methods: {name}", "zh": "方法之间的一致性：{name}"},
    "chart.attribution.mean_kendall": {"en": "mean Kendall τ", "zh": "平均 Kendall τ"},
    "chart.attribution.head_tau_title": {"en": "Does any head's attention rank tokens like leave-one-out does?",
                                         "zh": "有没有哪个头的注意力像留一法那样给词元排序？"},
    "chart.attribution.head_tau_subtitle": {
        "en": "Kendall τ between each head's weights from the query and occlusion scores.",
        "zh": "每个头从查询出发的权重与遮挡得分之间的 Kendall τ。"},
    "chart.attribution.decay_x": {"en": "fraction of content tokens removed (top-ranked first)",
                                  "zh": "移除的内容词元比例（排名靠前的先移除）"},
    "chart.attribution.decay_y": {"en": "f after removal", "zh": "移除后的 f"},
    "chart.attribution.removed": {"en": "removed", "zh": "移除比例"},
    "chart.attribution.decay_title": {"en": "Decay curves: f as each method's top tokens are removed",
                                      "zh": "衰减曲线：依次移除各方法排名靠前的词元时 f 的变化"},
    "chart.attribution.decay_subtitle": {
        "en": "Removed tokens are {removal}. Faster fall = the ranking found what f needs.",
        "zh": "移除的词元被{removal}。下降越快，说明排序找到了 f 需要的词元。"},
    "chart.attribution.row": {"en": "row", "zh": "注意力行"},
    "chart.attribution.row_model": {"en": "model's own", "zh": "模型自己的行"},
    "chart.attribution.row_uniform": {"en": "uniform", "zh": "均匀行"},
    "chart.attribution.row_adversarial": {"en": "adversarial (JSD {jsd}, |Δf| {change})",
                                          "zh": "对抗行（JSD {jsd}，|Δf| {change}）"},
    "chart.attribution.key": {"en": "key", "zh": "键"},
    "chart.attribution.key_token": {"en": "key token", "zh": "键词元"},
    "chart.attribution.weight": {"en": "weight", "zh": "权重"},
    "chart.attribution.attention_weight": {"en": "attention weight", "zh": "注意力权重"},
    "chart.attribution.counterfactual_title": {"en": "The attention row, and rows that replace it",
                                               "zh": "注意力行，以及替换它的行"},
    "chart.attribution.counterfactual_where": {"en": "Layer {layer}, {heads}, query {query}.",
                                               "zh": "第 {layer} 层，{heads}，查询 {query}。"},
    "chart.attribution.every_head": {"en": "every head", "zh": "所有头"},
    "chart.gt.low": {"en": "95 % low", "zh": "95% 下限"},
    "chart.gt.high": {"en": "95 % high", "zh": "95% 上限"},
    "chart.gt.chance": {"en": "chance {rate}", "zh": "随机水平 {rate}"},
    "chart.gt.random_ranking": {"en": "a random ranking", "zh": "随机排序"},
    "chart.gt.top1": {"en": "ranked first (top-1)", "zh": "排名第一"},
    "chart.gt.topk": {"en": "among the top {k}", "zh": "进入前 {k} 名"},
    "chart.gt.mechanism": {"en": "top token is B or either A", "zh": "排第一的词元是 B 或任一个 A"},
    "chart.gt.scoreboard_title": {"en": "{label} — which method finds the causal token?",
                                  "zh": "{label}——哪种方法能找到因果词元？"},
    "chart.gt.scoreboard_subtitle": {
        "en": "{examples} fresh examples of the {task} task; the causal token is known by construction: {truth}.",
        "zh": "{task} 任务的 {examples} 个新样例；因果词元由构造可知：{truth}。"},
    "chart.gt.scoreboard_key": {
        "en": "Bars: share of examples; black lines: 95 % Wilson interval; dashed red: a random ranking.",
        "zh": "条形：样例占比；黑线：95% 威尔逊区间；红色虚线：随机排序。"},
    "chart.gt.causal_mark": {"en": "◆ causal", "zh": "◆ 因果"},
    "chart.gt.supporting_mark": {"en": "◇ supporting", "zh": "◇ 辅助"},
    "chart.gt.role": {"en": "role", "zh": "角色"},
    "chart.gt.role.causal": {"en": "causal", "zh": "因果词元"},
    "chart.gt.role.supporting": {"en": "supporting", "zh": "辅助词元"},
    "chart.gt.role.other": {"en": "other", "zh": "其他词元"},
    "chart.gt.role.special": {"en": "special", "zh": "特殊词元"},
    "chart.gt.raw_score": {"en": "raw score", "zh": "原始得分"},
    "chart.gt.rank": {"en": "rank among content tokens", "zh": "在内容词元中的排名"},
    "chart.gt.scaled_legend": {"en": "score, min–max per method", "zh": "得分（各方法最小–最大）"},
    "chart.gt.example_note": {
        "en": "Each row rescaled to [0, 1] over the content tokens (min–max); grey: special token or no score.",
        "zh": "每行在内容词元上缩放到 [0, 1]（最小–最大）；灰色：特殊词元或没有得分。"},
    "chart.gt.causal_note": {"en": "{causal} (black outline): the token the answer depends on.",
                             "zh": "{causal}（黑框）：答案所依赖的词元。"},
    "chart.gt.causal_supporting_note": {
        "en": "{causal} (black outline): the token the answer depends on; {supporting} (dashed): the tokens the "
              "mechanism also reads.",
        "zh": "{causal}（黑框）：答案所依赖的词元；{supporting}（虚线框）：机制同样会读取的词元。"},
    "chart.gt.example_title": {"en": "Where each method puts the credit on this example",
                               "zh": "在这个样例上，各方法把功劳归给了哪里"},
    "chart.gt.peaks": {"en": "share of examples peaking on the causal token",
                       "zh": "峰值落在因果词元上的样例占比"},
    "chart.gt.weight": {"en": "mean weight on the causal token", "zh": "因果词元上的平均权重"},
    "chart.gt.peaks_legend": {"en": "share of examples whose row peaks on the causal token",
                              "zh": "峰值落在因果词元的比例"},
    "chart.gt.weight_legend": {"en": "mean weight of that row on the causal token",
                               "zh": "因果词元上的平均权重"},
    "chart.gt.last_token": {"en": "the last token", "zh": "最后一个词元"},
    "chart.gt.head_hits_title": {"en": "Which heads' attention peaks on the causal token — and with how much weight",
                                 "zh": "哪些头的注意力峰值落在因果词元上——权重又有多大"},
    "chart.gt.head_hits_row": {
        "en": "The row the attention method reads ({row}), over {examples} examples. Left: how often it ranks the "
              "causal token first among the content tokens; right: the weight it gives it.",
        "zh": "注意力方法读取的那一行（{row}），共 {examples} 个样例。左：它在内容词元中把因果词元排第一的频率；"
              "右：它给因果词元的权重。"},
    "chart.gt.head_hits_caution": {
        "en": "A head can rank a token first with almost none of its weight: a peak is not attention.",
        "zh": "一个头可以把某个词元排第一，却几乎不给它权重：峰值不等于注意力。"},
    "chart.gt.hover": {"en": "Hover a cell for its numbers.", "zh": "把鼠标移到格子上可看数值。"},
    "chart.gt.export_text": {"en": "{examples} fresh examples of {task} (seed {seed}), top-{k}",
                             "zh": "{task} 任务的 {examples} 个新样例（种子 {seed}），前 {k} 名"},
    # -------------------------------------------------------------------------- chart text: Compare, Lessons (issue 17)
    "chart.compare.legend_js": {"en": "JS divergence of the query's rows (nats)",
                                "zh": "查询词元两行的 JS 散度（奈特）"},
    "chart.compare.legend_shift": {"en": "key shift: mass moved from key 1 to key 2",
                                   "zh": "键转移：从键 1 移到键 2 的注意力"},
    "chart.compare.legend_entropy": {"en": "entropy change of the query's row, B − A (nats)",
                                     "zh": "查询词元所在行的熵变化，B − A（奈特）"},
    "chart.compare.layer": {"en": "layer", "zh": "层"},
    "chart.compare.rank": {"en": "rank (1 = moved most)", "zh": "排名（1 = 变化最大）"},
    "chart.compare.js": {"en": "JS divergence (nats)", "zh": "JS 散度（奈特）"},
    "chart.compare.entropy": {"en": "entropy change (nats)", "zh": "熵变化（奈特）"},
    "chart.compare.shift": {"en": "key shift", "zh": "键转移"},
    "chart.compare.grid_title": {"en": "How far “{query}” moved its attention, head by head",
                                 "zh": "“{query}”的注意力在每个头中移动了多少"},
    "chart.compare.grid_subtitle": {"en": "Click a cell to show that head's two heatmaps.",
                                    "zh": "点击一个格子，查看该头的两张热力图。"},
    "chart.compare.ranked_title": {"en": "Top {count} heads: “{query}”", "zh": "变化最大的 {count} 个头：“{query}”"},
    "chart.compare.ranked_subtitle": {"en": "JS divergence of the aligned rows (0 = same, 0.693 = disjoint).",
                                      "zh": "对齐后两行的 JS 散度（0 = 相同，0.693 = 完全不重叠）。"},
    "chart.compare.key_axis": {"en": "key (attended to)", "zh": "键（被关注）"},
    "chart.compare.query_axis": {"en": "query (attending)", "zh": "查询（发出关注）"},
    "chart.compare.query_token": {"en": "query token", "zh": "查询词元"},
    "chart.compare.key_token": {"en": "key token", "zh": "键词元"},
    "chart.compare.weight": {"en": "weight", "zh": "权重"},
    "chart.compare.heatmap_title": {"en": "Text {side}: layer {layer}, head {head}",
                                    "zh": "文本 {side}：第 {layer} 层第 {head} 个头"},
    "chart.compare.heatmap_subtitle": {"en": "Query row {label} outlined.", "zh": "已框出查询行 {label}。"},
    "chart.compare.difference_title": {"en": "B − A: layer {layer}, head {head}",
                                       "zh": "B − A：第 {layer} 层第 {head} 个头"},
    "chart.compare.difference_subtitle": {"en": "On the aligned tokens; red = more attention in B.",
                                          "zh": "只画对齐的词元；红色 = B 中注意力更多。"},
    "chart.compare.other": {"en": "other (no partner)", "zh": "其他（无对应词元）"},
    "chart.compare.attention_weight": {"en": "attention weight", "zh": "注意力权重"},
    "chart.compare.text": {"en": "text", "zh": "文本"},
    "chart.compare.key": {"en": "key", "zh": "键"},
    "chart.compare.rows_title": {"en": "Row of the query, layer {layer}, head {head}",
                                 "zh": "查询行：第 {layer} 层第 {head} 个头"},
    "chart.compare.rows_subtitle": {"en": "A and B; “other” = keys without a partner.",
                                    "zh": "A 与 B；“其他” = 没有对应词元的键。"},
    "chart.lessons.key": {"en": "key", "zh": "键"},
    "chart.lessons.weight": {"en": "weight", "zh": "权重"},
    "chart.lessons.keys": {"en": "keys", "zh": "键的投影"},
    "chart.lessons.asymmetry": {"en": "asymmetry", "zh": "非对称度"},
    "chart.lessons.mean_weight": {"en": "mean weight", "zh": "平均权重"},
    "chart.lessons.offset": {"en": "offset", "zh": "偏移"},
    "chart.lessons.entropy": {"en": "entropy", "zh": "熵"},
    "chart.lessons.max_weight": {"en": "max weight", "zh": "最大权重"},
    "chart.lessons.variance": {"en": "variance", "zh": "方差"},
    "chart.lessons.role": {"en": "role", "zh": "分工"},
    "chart.lessons.norm": {"en": "norm", "zh": "范数"},
    "chart.lessons.share": {"en": "share", "zh": "占比"},
    "chart.lessons.rank": {"en": "rank(S)", "zh": "秩(S)"},
    "chart.lessons.effective_rank": {"en": "erank(S)", "zh": "有效秩(S)"},
    "chart.lessons.path": {"en": "path", "zh": "路径"},
    "chart.lessons.ms": {"en": "ms", "zh": "毫秒"},
    "chart.lessons.materialised": {"en": "materialised n×n", "zh": "物化 n×n"},
    "chart.lessons.blocked": {"en": "blocked PyTorch (query blocks)", "zh": "分块 PyTorch（按查询分块）"},
    # ------------------------------------------------------------------------------------ heads corpus speed (issue 17)
    # The attribution methods' labels (inspector.analyses.attribution.method_label); English is each method's own label.
    "method.attention": {"en": "raw attention", "zh": "原始注意力"},
    "method.rollout": {"en": "attention rollout", "zh": "注意力展开"},
    "method.norm": {"en": "norm-weighted attention", "zh": "范数加权注意力"},
    "method.gradient": {"en": "gradient (saliency)", "zh": "梯度（显著性）"},
    "method.grad_x_input": {"en": "gradient × input", "zh": "梯度 × 输入"},
    "method.integrated_gradients": {"en": "integrated gradients", "zh": "积分梯度"},
    "method.occlusion": {"en": "occlusion (leave-one-out)", "zh": "遮挡（逐一删除）"},
    "method.value_zeroing": {"en": "value zeroing", "zh": "值置零"},
    "method.random": {"en": "random (baseline)", "zh": "随机（基线）"},
    # ------------------------------------------------------------------------------------------ census speed (issue 16)
    # --- bundled decoders (issue 27): one block, to be moved into its page's place at merge ---------------------
    # An export's provenance line for a bundled decoder: its card's quantisation and licence (model facts, kept as
    # written, like model names).
    "export.card": {"en": "{quantization}; licence: {licence}", "zh": "{quantization}；许可：{licence}"},
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
