"""The Lecture page (views/lecture.py) and the lecture path's steps (inspector.output.lecture), issue 31 item 7."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # The page (views/lecture.py) -------------------------------------------------------------------------------------
    ("lecture.title", "Lecture path", "讲课路线"),
    ("lecture.caption",
     "The storyline of attention as soft addressing, one step at a time: each step opens the right page with the "
     "right model, text, layer and head, says what to look at, and exports a slide.",
     "把“注意力即软寻址”的故事线一步一步讲下来：每一步都用合适的模型、文本、层和头打开对应的页面，说明该看什么，"
     "并可导出一张幻灯片。"),
    ("lecture.steps", "Steps", "步骤"),
    ("lecture.step_of", "Step {n} of {total}", "第 {n} 步，共 {total} 步"),
    ("lecture.look", "What to look at", "看什么"),
    ("lecture.opens", "Opens {page} on {model}, layer {layer}, head {head}, with the text “{text}”",
     "在{page}页面打开：{model}，第 {layer} 层第 {head} 个头，文本为“{text}”。"),
    ("lecture.opens_lesson", "Opens {page} at “{lesson}” on {model}, layer {layer}, head {head}, with the text "
     "“{text}”", "在{page}页面打开“{lesson}”：{model}，第 {layer} 层第 {head} 个头，文本为“{text}”。"),
    ("lecture.open", "Open this step", "打开这一步"),
    ("lecture.open_help", "Opens the page with this step's model, text, layer and head, as its share link does.",
     "用这一步的模型、文本、层和头打开页面，与打开它的分享链接效果相同。"),
    ("lecture.previous", "Previous", "上一步"),
    ("lecture.next", "Next", "下一步"),
    ("lecture.link", "This step's share link", "这一步的分享链接"),
    ("lecture.new_tab", "Open in a new tab", "在新标签页中打开"),
    ("lecture.link_caption", "Copy it into your slides or notes: it opens the step for anyone.",
     "可以复制到幻灯片或讲义里：任何人打开它都会看到这一步。"),
    ("lecture.slide", "Slide of this step", "这一步的幻灯片"),
    ("lecture.slide_button", "Slide 16:9 (PNG)", "16:9 幻灯片（PNG）"),
    ("lecture.slide_chart.heatmap",
     "A 1920 × 1080 slide with the step's title, what to look at and the attention heatmap of layer {layer}, head "
     "{head}, drawn when you click.",
     "一张 1920 × 1080 的幻灯片：这一步的标题、看什么，以及第 {layer} 层第 {head} 个头的注意力热图，点击时绘制。"),
    ("lecture.slide_chart.heads",
     "A 1920 × 1080 slide with the step's title, what to look at and every head of layer {layer}, drawn when you "
     "click.", "一张 1920 × 1080 的幻灯片：这一步的标题、看什么，以及第 {layer} 层的每个头，点击时绘制。"),
    ("lecture.slide_chart.entropy",
     "A 1920 × 1080 slide with the step's title, what to look at and the layer × head entropy grid, drawn when you "
     "click.", "一张 1920 × 1080 的幻灯片：这一步的标题、看什么，以及“层 × 头”的熵网格，点击时绘制。"),
    ("lecture.slide_chart.sweep",
     "A 1920 × 1080 slide with the step's title, what to look at and lesson 4's simulation of entropy against d.",
     "一张 1920 × 1080 的幻灯片：这一步的标题、看什么，以及第 4 课中熵随 d 变化的模拟。"),
    ("lecture.slide_chart.agreement",
     "A 1920 × 1080 slide with the step's title, what to look at and how far attention (layer {layer}, head {head}) "
     "and the attribution methods agree on this sentence (Kendall τ), computed when you click.",
     "一张 1920 × 1080 的幻灯片：这一步的标题、看什么，以及在这句话上注意力（第 {layer} 层第 {head} 个头）与各种归因"
     "方法的一致程度（Kendall τ），点击时计算。"),
    ("lecture.slide_title",
     "A 1920 × 1080 title slide: the step's title, what to look at and its link. This step's chart needs the page's "
     "own run: open the step and use the 16:9 slide button under the chart there.",
     "一张 1920 × 1080 的标题幻灯片：这一步的标题、看什么和它的链接。这一步的图表需要页面自己运行：打开这一步，"
     "再用那里图表下方的 16:9 幻灯片按钮。"),
    ("lecture.slide_step", "Lecture step {n} of {total}", "讲课路线第 {n} 步，共 {total} 步"),
    ("lecture.bad_step", "lecture={value} is not a step of the lecture path; starting at the first step ({first}).",
     "lecture={value} 不是讲课路线中的一步；从第一步（{first}）开始。"),
    ("share.bad_lesson", "lesson={value} is not a lesson number (1 to {largest}); opening the first lesson.",
     "lesson={value} 不是课程编号（1 到 {largest}）；打开第一课。"),
    # The steps, in the path's order (inspector.output.lecture.LECTURE): a title and one sentence of what to look at --
    ("lecture.soft.title", "Attention is soft addressing", "注意力是软寻址"),
    ("lecture.soft.look",
     "Read the row of “it” in the heatmap: the query spends a budget of exactly 1 over the keys, and how much goes to "
     "“animal” rather than “street” is the address it looked up.",
     "在热图中看“它”这一行：查询把总和恰好为 1 的预算分给各个键，分给“动物”而不是“马路”的那部分，"
     "就是它查到的地址。"),
    ("lecture.qkv.title", "Where Q, K and V come from", "Q、K、V 从哪里来"),
    ("lecture.qkv.look",
     "Lesson D8: q, k and v are the same token vector x times three learned matrices W_Q, W_K and W_V; compare "
     "their shapes and singular values, and note that the score form W_Q W_Kᵀ has rank at most d_k.",
     "课程 D8：q、k、v 是同一个词元向量 x 分别乘以三个学到的矩阵 W_Q、W_K、W_V；比较它们的形状和奇异值，"
     "并注意得分形式 W_Q W_Kᵀ 的秩至多为 d_k。"),
    ("lecture.why_xx.title", "Why not softmax(XXᵀ)X", "为什么不直接用 softmax(XXᵀ)X"),
    ("lecture.why_xx.look",
     "Lesson 2: with no projections a token's score with itself is its squared norm, so it mostly attends to itself, "
     "and x_i·x_j = x_j·x_i makes every score matrix symmetric; compare the real head's asymmetry with the head whose "
     "W_K is tied to W_Q.",
     "课程 2：没有投影时，词元与自身的得分就是它的范数平方，所以它主要关注自己；x_i·x_j = x_j·x_i 又让得分矩阵总是"
     "对称的。比较真实的头和把 W_K 绑定为 W_Q 的头的非对称度。"),
    ("lecture.sqrt_d.title", "Why divide by √d_k", "为什么除以 √d_k"),
    ("lecture.sqrt_d.look",
     "Lesson 4: the variance of q·k grows like d_k, so without scaling the softmax turns one-hot as d grows and with "
     "1/d_k it turns uniform; only 1/√d_k keeps it in between, at the same level for every d.",
     "课程 4：q·k 的方差随 d_k 增长，所以不缩放时 softmax 随 d 增大变成独热，除以 d_k 时又变得均匀；"
     "只有除以 √d_k 能让熵保持在两者之间，且不随 d 变化。"),
    ("lecture.multi_head.title", "What multi-head splits", "多头拆分了什么"),
    ("lecture.multi_head.look",
     "Lesson 5: d_model is cut into heads of d_k each, and every head of the layer looks with its own pattern — by "
     "offset, at [CLS] and [SEP], or by content — before W_O mixes them back.",
     "课程 5：d_model 被切成若干个维度为 d_k 的头，同一层的每个头都有自己的看法——按偏移、看第一个词元 <bos>、"
     "或按内容——最后由 W_O 再混合起来。"),
    ("lecture.position.title", "Where position enters", "位置信息从哪里进入"),
    ("lecture.position.look",
     "Lesson 3: attention alone is order-blind; read the mean weight by offset i − j, then lesson 19 just below: the "
     "sinusoidal formula, the model's learned table and RoPE side by side — only the formulas depend on the offset "
     "alone.",
     "课程 3：注意力本身不看顺序；先看按偏移 i − j 的平均权重，再看紧接着的课程 19：正弦公式、模型学到的位置表和 "
     "RoPE 并排对比——只有公式的相似度只取决于偏移。"),
    ("lecture.entropy.title", "Entropy per head", "每个头的熵"),
    ("lecture.entropy.look",
     "The layer × head grid: low entropy is a head that looks at one or two tokens, high entropy one that spreads "
     "wide; click the sharpest and the broadest heads and compare their heatmaps.",
     "“层 × 头”网格：熵低的头只看一两个词元，熵高的头看得很散；点击最尖锐和最分散的头，比较它们的热图。"),
    ("lecture.explanation.title", "Attention is not explanation", "注意力不等于解释"),
    ("lecture.explanation.look",
     "Compare raw attention with gradients, integrated gradients and occlusion on the same sentence: where they "
     "disagree, and the counterfactual rows that leave the output unchanged, are why a bright cell is not a cause.",
     "在同一句话上比较原始注意力与梯度、积分梯度和遮挡：它们不一致的地方，以及不改变输出的反事实注意力行，"
     "说明亮的格子并不是原因。"),
    # 简体中文: "O(n²)，以及 FlashAttention 改变了什么" took three lines in the step list at 1000 px, its radio button
    # beside the second and "么" alone on the third (issue 44 walkthrough).
    ("lecture.complexity.title", "O(n²), and what FlashAttention changes", "O(n²) 与 FlashAttention"),
    ("lecture.complexity.look",
     "Lesson 7: click “Measure on this device”; the counted bytes of the n × n weights and the FLOPs grow as n² on any "
     "machine, the flash path's output equals the materialised one (max |Δ| shown), and FlashAttention recomputes the "
     "weights in the backward instead of storing them — compute traded for bandwidth.",
     "课程 7：点击“在本设备上测量”；n × n 权重的字节数和 FLOPs 在任何机器上都按 n² 增长，flash 路径的输出与显式计算"
     "相同（显示 max |Δ|），FlashAttention 在反向传播中重新计算权重而不是存下来——用算力换带宽。"),
    ("lecture.causal.title", "Causal vs bidirectional", "因果与双向"),
    ("lecture.causal.look",
     "Lesson D1: BERT's mask lets every token see the whole sentence, a decoder's lets token i see only tokens up to "
     "i, so the upper triangle of every decoder heatmap is empty.",
     "课程 D1：BERT 的掩码让每个词元看到整句话，解码器的掩码只让第 i 个词元看到第 i 个及之前的词元，"
     "所以解码器每张热图的上三角都是空的。"),
    ("lecture.rope.title", "RoPE: position inside Q·K", "RoPE：位置进入 Q·K"),
    ("lecture.rope.look",
     "Lesson D2: shift every position by the same amount and Gemma's attention scores stay the same, because RoPE "
     "rotates q and k and only their relative offset is left.",
     "课程 D2：把所有位置都平移同样的量，Gemma 的注意力得分保持不变，因为 RoPE 旋转 q 和 k，只留下它们的相对偏移。"),
    ("lecture.sinks.title", "Attention sinks", "注意力汇点"),
    ("lecture.sinks.look",
     "In Gemma's heatmap most rows put a large share of their weight on the first token, whatever it says: a sink "
     "where a head parks the budget it does not need.",
     "在 Gemma 的热图中，大多数行都把很大一部分权重放在第一个词元上，无论它是什么：这是一个汇点，"
     "头把用不上的预算停放在这里。"),
    ("lecture.windows.title", "Sliding windows vs global layers", "滑动窗口层与全局层"),
    ("lecture.windows.look",
     "Lesson D5 on Gemma: click its button; a sliding-window layer's cost and cache stop growing past the window while "
     "a global layer's keep growing, and a token outside every window can still be reached through the global "
     "layers.",
     "课程 D5（Gemma）：点击它的按钮；滑动窗口层的开销和缓存超过窗口后不再增长，全局层则一直增长；"
     "所有窗口之外的词元仍可以通过全局层被看到。"),
    ("lecture.linear.title", "Linear attention: what it gives up", "线性注意力：放弃了什么"),
    ("lecture.linear.look",
     "Lesson D6: replace exp(q·k) by φ(q)·φ(k) and the n × n matrix disappears — cost linear in n — but compare the "
     "weights: the linear head cannot be as sharp as the softmax one.",
     "课程 D6：把 exp(q·k) 换成 φ(q)·φ(k)，n × n 矩阵就消失了——开销随 n 线性增长——但比较权重："
     "线性注意力的头无法像 softmax 的头那样尖锐。"),
    ("lecture.mechanism.title", "Looking is not using: which heads the answer needs",
     "看到不等于用到：答案需要哪些头"),
    ("lecture.mechanism.look",
     "Set the attention grid beside the patching grid: the heads that look at “Italy” are bright in one, the heads "
     "whose clean output brings “ Rome” back in the other. Lesson D9 names both lists with their numbers and says "
     "whether they are the same heads.",
     "把注意力网格和修补网格放在一起看：一张图里亮的是看向“Italy”的头，"
     "另一张图里亮的是把干净输出放回后能让“ Rome”回来的头。课程 D9 用数字列出这两组头，并说明它们是否相同。"),
    ("lecture.generate.title", "Generation with a KV cache", "用 KV 缓存生成"),
    ("lecture.generate.look",
     "Scrub through the steps: each new token is one query row against the cached keys and values of every earlier "
     "token, and the cache grows by one token a step.",
     "拖动步骤滑块：每个新词元都是一行查询，对照之前所有词元缓存下来的键和值；缓存每一步增加一个词元。"),
)
