"""The sidebar every page draws, its share link, and the run each page opens with (views/inputs.py)."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # The sidebar (views/inputs.sidebar) -------------------------------------------------------------------------------
    ("sidebar.language", "Language · 语言", "语言 · Language"),
    ("sidebar.share_warning", "Share link: {warning}", "分享链接：{warning}"),
    ("sidebar.input", "Input", "输入"),
    ("sidebar.model", "Model", "模型"),
    ("sidebar.model_other", "Hub id or local folder", "Hub 模型 id 或本地文件夹"),
    ("sidebar.model_other_help", "Safetensors weights only; models that need their own code are refused.",
     "只接受 safetensors 权重；需要运行自带代码的模型会被拒绝。"),
    ("sidebar.examples", "Examples", "示例"),
    ("sidebar.examples_placeholder", "Pick an example text…", "选择一段示例文本…"),
    ("sidebar.text", "Text", "文本"),
    ("sidebar.text_help", "Press Ctrl+Enter or click outside the box to run.",
     "按 Ctrl+Enter 或点击文本框外即可运行。"),
    ("sidebar.text_cut_from",
     "The paste had {length} characters; the text box holds at most {limit}, so it was cut there and only the first "
     "{limit} are analysed.",
     "粘贴的内容有 {length} 个字符；文本框最多容纳 {limit} 个字符，因此已在此处截断，只分析前 {limit} 个字符。"),
    ("sidebar.backend", "Attention backend", "注意力后端"),
    ("sidebar.backend_help",
     "auto: Triton on a GPU, blocked PyTorch on a CPU. torch: the blocked PyTorch path. triton: the project's Triton "
     "FlashAttention kernel (needs a GPU).",
     "auto：GPU 上用 Triton，CPU 上用分块 PyTorch。torch：分块 PyTorch 路径。triton：本项目的 Triton FlashAttention "
     "内核（需要 GPU）。"),
    ("sidebar.slide", "Slide mode", "幻灯片模式"),
    ("sidebar.slide_help", "Large fonts and colour-blind-safe palettes, for slides.",
     "大字号和色盲友好配色，适合幻灯片。"),
    ("sidebar.share", "Share", "分享"),
    ("sidebar.share_caption",
     "Copy this link (icon at the top right of the box): it reopens this model, text, head and options.",
     "复制此链接（框右上角的图标）：它会重新打开同样的模型、文本、注意力头和选项。"),
    # Model menus (views/inputs.py): the labels of the suggested models; the options (the specs) never change ----------
    ("model.bundled", "all-MiniLM-L6-v2 (bundled)", "all-MiniLM-L6-v2（内置）"),
    ("model.bert_base", "bert-base-uncased (hub)", "bert-base-uncased（Hub 模型）"),
    ("model.distilbert", "distilbert-base-uncased (hub)", "distilbert-base-uncased（Hub 模型）"),
    ("model.gpt2", "gpt2 (hub)", "gpt2（Hub 模型）"),
    ("model.smollm2", "SmolLM2-135M, Llama-style with RoPE and GQA (hub)",
     "SmolLM2-135M，Llama 式，含 RoPE 与 GQA（Hub 模型）"),
    ("model.bert_chinese", "bert-base-chinese, reads Chinese (hub)", "bert-base-chinese，能读中文（Hub 模型）"),
    ("model.qwen", "Qwen2.5-0.5B, Llama-style, reads Chinese and other languages (hub)",
     "Qwen2.5-0.5B，Llama 式，能读中文等多种语言（Hub 模型）"),
    ("model.other", "Other: a hub id or a local folder…", "其他：Hub id 或本地文件夹…"),
    # A shipped model in a menu, short enough for the sidebar (English keeps the model card's own label).
    ("model.ground_truth", "{name} (ground truth)", "真值：{name}"),
    ("model.other_placeholder", "org/name or /path/to/model", "org/name 或本地文件夹路径"),
    # The example texts' titles in the menu (inspector.base.examples: English is each example's own title) -------------
    ("example.01-animal-street", "Coreference: what is “it”?", "指代：“it”指的是什么？"),
    ("example.02-coreference", "Coreference: the trophy and the suitcase", "指代：奖杯和手提箱"),
    ("example.03-agreement", "Subject–verb agreement across a long gap", "长距离的主谓一致"),
    ("example.04-chinese", "Chinese — needs a model that reads it (bert-base-chinese or Qwen2.5)",
     "中文——需要能读中文的模型（bert-base-chinese 或 Qwen2.5）"),
    ("example.05-code", "Python code", "Python 代码"),
    # The share link (views/inputs.publish_view) -----------------------------------------------------------------------
    ("share.too_long",
     "This view's link would be {length} characters, longer than the {limit} a link can carry safely (servers refuse "
     "longer ones), so none is offered. Shorten the text to share this view; the address bar keeps every other "
     "setting, but not the text.",
     "此视图的链接将长达 {length} 个字符，超过链接能安全携带的 {limit} 个字符（服务器会拒绝更长的链接），"
     "因此不提供链接。请缩短文本后再分享此视图；地址栏保留其他所有设置，但不包含文本。"),
    # The run each page opens with (views/inputs.open_page): loading, running, memory, unknown tokens ------------------
    ("inputs.type_model", "Type a hub id (org/name) or the path of a local model folder in the sidebar.",
     "请在侧边栏输入 Hub 模型 id（org/name）或本地模型文件夹的路径。"),
    ("inputs.loading", "Loading the model…", "正在加载模型…"),
    ("inputs.load_failed", "The model could not be loaded", "模型无法加载"),
    ("unknown.sidebar_hint", "Choose one under “Model” in the sidebar, or type its hub id under “Other”.",
     "在侧栏的“模型”中选择一个，或在“其他”中输入它的 hub id。"),
    ("inputs.running", "Running attention…", "正在运行注意力…"),
    ("inputs.run_failed", "The text could not be run", "无法运行这段文本"),
    ("notice.weights_budget",
     "Every layer's attention weights at {n} tokens would take {needed} MiB, more than the {budget} MiB budget of "
     "one request: statistics (entropy, sink mass) cover every layer, exact weights only layer {layer}. Choosing "
     "another layer runs the model again.",
     "在 {n} 个词元上保存每一层的注意力权重需要 {needed} MiB，超过单次请求 {budget} MiB 的预算：统计量（熵、"
     "汇点质量）覆盖所有层，精确权重只保留第 {layer} 层。选择其他层会重新运行模型。"),
    ("notice.oom_fewer_weights",
     "The {where} ran out of memory keeping several layers' attention weights; this run kept layer {layer}'s only, "
     "so another layer needs a new run.",
     "{where} 在保留多层注意力权重时内存不足；本次运行只保留了第 {layer} 层的权重，查看其他层需要重新运行。"),
    ("notice.oom_cpu",
     "The {where} ran out of memory; this view was computed on the CPU instead (slower). The next run tries the "
     "{where} again.",
     "{where} 内存不足；本视图改在 CPU 上计算（较慢）。下次运行会再次尝试 {where}。"),
    ("unknown.warning",
     "{model} cannot read this text: {unknown} of its {total} tokens ({share}) are unknown to it ([UNK]), more than "
     "{limit}. Every unknown token looks the same to the model, so its attention here says little about the text. "
     "Models that read {script}: {models}.",
     "{model} 读不懂这段文本：{total} 个词元中有 {unknown} 个（{share}）是它不认识的 [UNK]，超过了 {limit}。"
     "每个未知词元在模型看来都一样，所以这里的注意力几乎说明不了这段文本。能读{script}的模型：{models}。"),
    ("unknown.script.han", "Chinese", "中文"),
    ("unknown.script.kana", "Japanese", "日文"),
    ("unknown.script.hangul", "Korean", "韩文"),
    ("unknown.script.other", "this script", "这种文字"),
)
