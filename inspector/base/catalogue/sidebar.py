"""The sidebar every page draws, its share link, and the run each page opens with (views/sidebar.py, session.py,
share_state.py)."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # The sidebar (views/sidebar.sidebar) ------------------------------------------------------------------------------
    ("sidebar.language", "Language · 语言", "语言 · Language"),
    ("sidebar.share_warning", "Share link: {warning}", "分享链接：{warning}"),
    ("sidebar.misconfigured", "This instance is misconfigured: {error}", "此实例的配置有误：{error}"),
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
    # Model menus (views/sidebar.py): the labels of the suggested models; the options (the specs) never change ---------
    ("model.bundled", "all-MiniLM-L6-v2 (bundled)", "all-MiniLM-L6-v2（内置）"),
    ("model.bundled_decoder", "{name} (bundled)", "{name}（内置）"),
    ("model.bert_base", "bert-base-uncased (hub)", "bert-base-uncased（Hub 模型）"),
    ("model.distilbert", "distilbert-base-uncased (hub)", "distilbert-base-uncased（Hub 模型）"),
    ("model.gpt2", "gpt2 (hub)", "gpt2（Hub 模型）"),
    ("model.smollm2", "SmolLM2-135M, Llama-style with RoPE and GQA (hub)",
     "SmolLM2-135M，Llama 式，含 RoPE 与 GQA（Hub 模型）"),
    ("model.bert_chinese", "bert-base-chinese, reads Chinese (hub)", "bert-base-chinese，能读中文（Hub 模型）"),
    ("model.qwen", "Qwen2.5-0.5B, Llama-style, reads Chinese and other languages (hub)",
     "Qwen2.5-0.5B，Llama 式，能读中文等多种语言（Hub 模型）"),
    ("model.other", "Other: a hub id or a local folder…", "其他：Hub id 或本地文件夹…"),
    # A shipped model in a menu, short enough for the sidebar (English keeps the model card's own label); its full
    # label (inspector.core.loading.model_label: English is the card's own) and what kind of model it is, by folder.
    ("model.ground_truth", "{name} (ground truth)", "已知答案：{name}"),
    ("model.shipped_label", "Ground truth: {name} (shipped)", "已知答案：{name}（项目自带）"),
    ("model.shipped.planted-token", "planted-token classifier", "植入词元分类器"),
    ("model.shipped.deceptive-attention", "deceptive-attention classifier", "欺骗性注意力分类器"),
    ("model.shipped.induction", "induction language model", "归纳语言模型"),
    ("model.other_placeholder", "org/name or /path/to/model", "org/name 或本地文件夹路径"),
    # The example texts' titles in the menu (inspector.base.examples: English is each example's own title) -------------
    ("example.01-animal-street", "Coreference: what is “it”?", "指代：“it”指的是什么？"),
    ("example.02-coreference", "Coreference: the trophy and the suitcase", "指代：奖杯和手提箱"),
    ("example.03-agreement", "Subject–verb agreement across a long gap", "长距离的主谓一致"),
    ("example.04-chinese", "Chinese — needs a model that reads it: Gemma 3 270M (bundled)",
     "中文——需要能读中文的模型：Gemma 3 270M（内置）"),
    ("example.05-code", "Python code", "Python 代码"),
    # The share link (views/share_state.publish_view) ------------------------------------------------------------------
    ("share.too_long",
     "This view's link would be {length} characters, longer than the {limit} a link can carry safely (servers refuse "
     "longer ones), so none is offered. Shorten the text to share this view; the address bar keeps every other "
     "setting, but not the text.",
     "此视图的链接将长达 {length} 个字符，超过链接能安全携带的 {limit} 个字符（服务器会拒绝更长的链接），"
     "因此不提供链接。请缩短文本后再分享此视图；地址栏保留其他所有设置，但不包含文本。"),
    # What a link asked for that cannot be shown (inspector.output.share.decode_view, ViewState.fit) -------------------
    ("share.unreadable", "The link's parameters could not be read ({value}); showing the default view.",
     "无法读取链接的参数（{value}）；改为显示默认视图。"),
    ("share.not_text", "{key}={value} is not text; using the default.", "{key}={value} 不是文本；改用默认值。"),
    ("share.version_newer",
     "v={value}: this link was made by a newer version of the app; reading it as version {version}, so parts of the "
     "view may differ.",
     "v={value}：此链接由更新版本的应用生成；按第 {version} 版读取，视图的部分内容可能不同。"),
    ("share.version_unknown",
     "v={value}: unknown link version; reading it as version {version}, so parts of the view may differ.",
     "v={value}：未知的链接版本；按第 {version} 版读取，视图的部分内容可能不同。"),
    ("share.model", "model={value} {problem}; using the bundled model instead.",
     "model={value} {problem}；改用内置模型。"),
    ("share.model_not_shipped", "is not a model this project ships ({error})", "不是本项目自带的模型（{error}）"),
    ("share.model_not_bundled", "is not a bundled model ({choices})", "不是内置模型（{choices}）"),
    ("share.model_not_hub_id",
     "is not a Hugging Face hub id of the form name or org/name (links cannot name local folders)",
     "不是 name 或 org/name 形式的 Hugging Face hub id（链接不能指向本地文件夹）"),
    ("share.model_local", "names a file or folder on this server, and links cannot load local files",
     "指向这台服务器上的文件或文件夹，而链接不能加载本地文件"),
    ("share.model_not_offered",
     "is not one of the models this instance offers ({models}); a hosted instance loads only its own list",
     "不是此实例提供的模型之一（{models}）；托管实例只加载自己列表中的模型"),
    ("share.bad_tz",
     "tz={value} is not a valid compressed text (or unpacks to more than {limit} characters); using the example text "
     "instead.",
     "tz={value} 不是有效的压缩文本（或解压后超过 {limit} 个字符）；改用示例文本。"),
    ("share.text_and_tz", "The link has both text and tz; using tz.", "链接同时带有 text 和 tz；使用 tz。"),
    ("share.text_too_long",
     "The link's text has {length} characters, more than the {limit} this app reads; using the example text instead.",
     "链接中的文本有 {length} 个字符，超过本应用能读取的 {limit} 个；改用示例文本。"),
    ("share.text_empty", "The link's text is empty; using the example text instead.",
     "链接中的文本为空；改用示例文本。"),
    ("share.bad_page", "page={value} is not a page of this app; showing {fallback} instead.",
     "page={value} 不是本应用的页面；改为显示 {fallback}。"),
    ("share.bad_layer", "layer={value} is not a layer number (0 to {largest}); using layer {default} instead.",
     "layer={value} 不是层号（0 到 {largest}）；改用第 {default} 层。"),
    ("share.bad_head", "head={value} is not a head number (0 to {largest}); using head {default} instead.",
     "head={value} 不是头的编号（0 到 {largest}）；改用第 {default} 个头。"),
    ("share.not_one_of", "{key}={value} is not one of {allowed}; using {default} instead.",
     "{key}={value} 不是 {allowed} 之一；改用 {default}。"),
    ("share.bad_flag", "{key}={value} is not 0, 1, true or false; using {default} instead.",
     "{key}={value} 不是 0、1、true 或 false；改为{default}。"),
    ("share.on", "on", "开启"),
    ("share.off", "off", "关闭"),
    ("share.layer_clamped",
     "The link asks for layer {asked}, but this model has {layers} layers (0–{last}); showing layer {layer} instead.",
     "链接要求第 {asked} 层，但这个模型只有 {layers} 层（0–{last}）；改为显示第 {layer} 层。"),
    ("share.head_clamped",
     "The link asks for head {asked}, but this model has {heads} heads per layer (0–{last}); showing head {head} "
     "instead.",
     "链接要求第 {asked} 个头，但这个模型每层只有 {heads} 个头（0–{last}）；改为显示第 {head} 个头。"),
    # … and on the Compare page (inspector.output.share.decode_compare) ------------------------------------------------
    ("share.bad_tzb", "tzb={value} is not a valid compressed text; using the example text B.",
     "tzb={value} 不是有效的压缩文本；改用示例文本 B。"),
    ("share.bad_text_b", "text_b={value} is empty or longer than {limit} characters; using the example text B instead.",
     "text_b={value} 为空或超过 {limit} 个字符；改用示例文本 B。"),
    ("share.model_b", "model_b={value} {problem}; comparing two texts instead.",
     "model_b={value} {problem}；改为对比两段文本。"),
    ("share.model_b_not_offered", "is not one of the models this instance offers", "不是此实例提供的模型之一"),
    ("share.not_a_token", "is not a token (1 to {largest} visible characters)",
     "不是词元（1 到 {largest} 个可见字符）"),
    ("share.bad_query", "query={value} {problem}; using the first differing token.",
     "query={value} {problem}；改用第一个不同的词元。"),
    ("share.bad_keys", "keys={value} is not two tokens separated by a comma; using the default keys.",
     "keys={value} 不是用逗号分隔的两个词元；改用默认的键。"),
    ("share.bad_roles", "{key}={value} is not a whole number; using the default.",
     "{key}={value} 不是整数；改用默认值。"),
    ("share.bad_generate", "{key}={value} is not a number from {low} to {high}; using {default}.",
     "{key}={value} 不是 {low} 到 {high} 之间的数；改用 {default}。"),
    # The run each page opens with (views/sidebar.open_page): loading, running, memory, unknown tokens -----------------
    ("inputs.type_model", "Type a hub id (org/name) or the path of a local model folder in the sidebar.",
     "请在侧边栏输入 Hub 模型 id（org/name）或本地模型文件夹的路径。"),
    ("inputs.loading", "Loading the model…", "正在加载模型…"),
    ("inputs.preparing",
     "Preparing {model} for its first use: checking the package's SHA-256, then converting it to a cached folder "
     "(once; about a minute)…",
     "首次使用前正在准备 {model}：先校验软件包的 SHA-256，再转换为缓存文件夹（只需一次，约一分钟）…"),
    ("inputs.preparing_at", "Preparing {model} for its first use: {percent}", "首次使用前正在准备 {model}：{percent}"),
    ("inputs.load_failed", "The model could not be loaded", "模型无法加载"),
    ("unknown.switch", "Switch to {model}: it reads {script} offline", "切换到 {model}：它无需下载就能读{script}"),
    ("unknown.sidebar_hint", "Choose one under “Model” in the sidebar, or type its hub id under “Other”.",
     "在侧边栏的“模型”中选择一个，或在“其他”中输入它的 hub id。"),
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
    # A hosted instance's plan for a page's long job (inspector.serving.jobs; issue 33) -------------------------------
    ("notice.job_refused",
     "the text has {length} tokens; on this hosted instance {job} reads at most {limit} tokens with {model} (its work "
     "grows with the length, and one request gets {seconds} s and {mib} MiB) — shorten the text, or run the app on "
     "your own machine (make app) for long texts",
     "这段文本有 {length} 个词元；在本托管实例上，{job}使用 {model} 时最多读取 {limit} 个词元（工作量随长度增长，"
     "一次请求只有 {seconds} 秒和 {mib} MiB）——请缩短文本，或在自己的机器上运行本应用（make app）处理长文本。"),
    # f"job.{kind}" (inspector.serving.jobs): the job a refusal or a deadline names
    ("job.heads", "the Heads report", "Heads 报告"),
    ("job.attribution", "the attribution run", "归因计算"),
    ("job.lessons", "the Lessons page", "课程页面"),
    ("job.compare", "the comparison", "对比"),
    ("job.groundtruth", "the Ground-truth scoreboard", "已知答案计分板"),
    ("job.generate", "the generation", "生成"),
    ("job.mechanism", "the mechanism run", "机制计算"),
    ("job.roles", "the head-roles probe", "头角色探针"),
    ("job.inspect", "the Inspect view", "Inspect 视图"),
    ("job.census", "the census", "普查"),
    ("notice.job_corpus",
     "This hosted instance runs a Heads corpus of at most {tokens} tokens in one request: the first {kept} of the "
     "{asked} texts were measured. Run the app on your own machine (make app) for the whole corpus.",
     "本托管实例一次请求最多对 {tokens} 个词元运行 Heads 语料：只测量了 {asked} 段文本中的前 {kept} 段。"
     "如需完整语料，请在自己的机器上运行本应用（make app）。"),
    ("notice.job_examples",
     "This hosted instance scores at most {kept} examples in one request: {kept} of the {asked} asked for were "
     "scored. Run the app on your own machine (make app) for more.",
     "本托管实例一次请求最多评分 {kept} 个样例：所要求的 {asked} 个中评分了 {kept} 个。如需更多，请在自己的机器上"
     "运行本应用（make app）。"),
    ("notice.generate_weights",
     "Every asked-for layer's attention rows at {n} tokens would not fit the {mib} MiB one request may keep: this "
     "generation keeps {kept} of the {asked} layers' weights ({layers}); every layer's statistics are kept.",
     "在 {n} 个词元上保存所要求的每一层注意力行，会超过单次请求可保留的 {mib} MiB：本次生成只保留 {asked} 层中 {kept} "
     "层的权重（{layers}）；所有层的统计量都会保留。"),
    ("notice.generate_weights_refused",
     "at {n} tokens not even one layer of {model}'s attention rows fits the {mib} MiB one request may keep (it allows "
     "{longest} tokens) — shorten the prompt or ask for fewer new tokens, or ask for no weights (--weights none)",
     "在 {n} 个词元上，{model} 连一层注意力行都放不进单次请求可保留的 {mib} MiB（最多允许 {longest} 个词元）——请缩短"
     "提示、减少新词元，或不要求权重（--weights none）。"),
    ("notice.job_new_tokens",
     "This hosted instance generates at most {kept} new tokens for this text in one request ({asked} asked for). "
     "Run the app on your own machine (make app) for longer generations.",
     "本托管实例一次请求对这段文本最多生成 {kept} 个新词元（要求 {asked} 个）。如需更长的生成，请在自己的机器上"
     "运行本应用（make app）。"),
)
