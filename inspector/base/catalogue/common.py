"""Words every page shares: the navigation, how an output change is measured, the attention paths, the
attribution methods' names, an exported chart's provenance and thinned axis labels."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # Navigation, in the order of the menu (app.py) --------------------------------------------------------------------
    ("nav.inspect", "Inspect", "查看"),
    ("nav.heads", "Heads", "注意力头"),
    ("nav.atlas", "Atlas", "头图谱"),
    ("nav.attribution", "Attribution", "归因"),
    ("nav.mechanism", "Mechanism", "机制"),
    ("nav.lessons", "Lessons", "课程"),
    ("nav.groundtruth", "Ground truth", "已知答案"),
    ("nav.compare", "Compare", "对比"),
    ("nav.generate", "Generate", "生成"),
    ("nav.lecture", "Lecture", "讲课路线"),
    # How a change of the model's output is measured, by output kind (inspector.core.outputs) --------------------------
    ("measure.embedding", "cosine distance of the sentence embedding", "句向量的余弦距离"),
    ("measure.distribution", "KL divergence of the predicted-token distribution, nats", "预测词元分布的 KL 散度，奈特"),
    ("measure.logits", "largest change of a class logit", "类别 logit 的最大变化"),
    # The attention paths (inspector.analyses.lessons, inspector.charts.lessons) ---------------------------------------
    ("backend.triton", "Triton FlashAttention", "Triton FlashAttention"),
    ("backend.blocked", "blocked PyTorch, query blocks", "分块 PyTorch，按查询分块"),
    # The attribution methods' labels (attribution.method_label): English is each method's own label -------------------
    ("method.attention", "raw attention", "原始注意力"),
    ("method.rollout", "attention rollout", "注意力展开"),
    ("method.norm", "norm-weighted attention", "范数加权注意力"),
    ("method.gradient", "gradient (saliency)", "梯度（显著性）"),
    ("method.grad_x_input", "gradient × input", "梯度 × 输入"),
    ("method.integrated_gradients", "integrated gradients", "积分梯度"),
    ("method.occlusion", "occlusion (leave-one-out)", "遮挡（逐一删除）"),
    ("method.value_zeroing", "value zeroing", "值置零"),
    ("method.random", "random (baseline)", "随机（基线）"),
    # An exported chart's provenance caption (inspector.output.export) -------------------------------------------------
    ("export.unknown_model", "unknown model", "未知模型"),
    ("export.layer_head", "layer {layer}, head {head}", "第 {layer} 层第 {head} 个头"),
    ("export.layer", "layer {layer}", "第 {layer} 层"),
    ("export.head", "head {head}", "第 {head} 个头"),
    # Chinese: a no-break space ties the label to its value (a caption line ended on "后端", "torch" on the next).
    ("export.backend", "backend {backend}", "后端\u00a0{backend}"),
    # A bundled decoder's card in the provenance line: quantisation and licence (model facts, kept as written).
    ("export.too_large", "An image of {cells} cells would take long to draw (the limit is {limit}); the numbers are in "
     "the export pack.", "这张图有 {cells} 个格子，绘制会很慢（上限为 {limit}）；数值在导出包里。"),
    ("export.failed", "The {kind} export failed, so nothing was downloaded ({reason}). The numbers behind the chart "
     "are still in the export pack; please report this chart.",
     "{kind} 导出失败，没有下载任何文件（{reason}）。图背后的数值仍在导出包里；请报告这张图。"),
    # Why an export failed (inspector.output.export's errors; views.export_buttons.failure_reason): on a page in
    # another language the renderer's own English line is left out.
    ("export.error.draw", "could not draw the figure as {kind}", "无法把这张图绘制成 {kind}"),
    ("export.error.rasterise", "could not convert the figure to PNG", "无法把这张图转换成 PNG"),
    ("export.reason_unknown", "the renderer stopped with an error", "绘图程序出错停止"),
    ("export.slide", "Slide 16:9", "16:9 幻灯片"),
    ("export.slide_help", "A 1920 × 1080 PNG: the chart's title, the chart and where it came from — ready for a slide.",
     "1920 × 1080 的 PNG：图表标题、图表和来源说明，可直接放进幻灯片。"),
    ("export.part", "Heads {first}–{last} of {heads} (part {part} of {parts}).",
     "第 {first}–{last} 个头，共 {heads} 个（第 {part} 部分，共 {parts} 部分）。"),
    ("export.model_card", "{model} ({card})", "{model}（{card}）"),
    ("export.card", "{quantization}, dequantised to {dtype}; licence: {licence}",
     "{quantization}，已反量化为 {dtype}；许可：{licence}"),
    # A licence's name in the reader's language, the owner's own name beside it so it stays recognisable
    # (inspector.output.export.LICENCE_NAMES).
    ("export.licence.gemma_terms", "Gemma Terms of Use", "Gemma 使用条款（Gemma Terms of Use）"),
    # Axis labels thinned to fit a narrow column (inspector.charts.base) -----------------------------------------------
    # The hover hints are separate sentences: on screen only, never in an export (inspector.output.export).
    ("chart.thinned.token", "In a narrow column only every k-th token is labelled.",
     "栏太窄时只标出每隔 k 个的词元。"),
    ("chart.thinned.head", "In a narrow column only every k-th head is labelled.",
     "栏太窄时只标出每隔 k 个的注意力头。"),
    ("chart.hover.token", "Hover a cell for its token.", "把鼠标移到格子上可看它的词元。"),
    ("chart.hover.head", "Hover a cell for its head.", "把鼠标移到格子上可看它是哪个头。"),
    # Errors in the reader's language (inspector.base.errors): an error without a sentence of its own is shown, on a
    # page in another language, by its class's sentence: error_text builds f"error.kind.{error_kind(err)}" -------------
    ("error.kind.inspector", "The request could not be run. Check the model and the options, then try again.",
     "无法运行这个请求。请检查模型和选项后再试。"),
    ("error.kind.model_not_found", "This model cannot be found. Pick a model from the sidebar's menu.",
     "找不到这个模型。请从侧边栏的菜单里选一个模型。"),
    ("error.kind.not_a_model", "This model's files cannot be read: they are damaged or incomplete. Pick another "
     "model.", "这个模型的文件无法读取：文件已损坏或不完整。请换一个模型。"),
    ("error.kind.unsafe_model", "This model would run code that comes with it, which the inspector never does. Pick "
     "another model.", "这个模型需要运行随附的代码，本工具从不这样做。请换一个模型。"),
    ("error.kind.unsupported_model", "This model is not supported: its attention cannot be read here. Pick a model "
     "such as BERT, GPT-2, Llama or Qwen2.", "不支持这个模型：这里读不到它的注意力。请选 BERT、GPT-2、Llama 或 Qwen2 "
     "这类模型。"),
    ("error.kind.hub_unavailable", "The Hugging Face hub cannot be reached, and this model is not in the local "
     "cache. Pick a bundled model.", "无法连接 Hugging Face，本地缓存里也没有这个模型。请选一个内置模型。"),
    ("error.kind.invalid_text", "The text cannot be read by this model: it is empty or too long. Shorten or change "
     "it.", "这个模型读不了这段文本：文本为空或太长。请缩短或修改文本。"),
    ("error.kind.backend", "The chosen attention backend cannot run here. Pick the automatic backend.",
     "所选的注意力后端无法在这里运行。请选择自动后端。"),
    ("error.kind.invalid_request", "An option asks for something this model does not have. Change the option.",
     "某个选项要求的内容在这个模型里不存在。请修改这个选项。"),
    ("error.kind.model_not_allowed", "This instance does not offer this model. Pick one from the sidebar's menu.",
     "这个实例不提供这个模型。请从侧边栏的菜单里选一个。"),
    ("error.kind.model_too_large", "This model is larger than this instance allows. Pick a smaller model.",
     "这个模型超过了本实例允许的大小。请选一个更小的模型。"),
    ("error.kind.hosting_config", "This instance's settings cannot be read. Tell its operator.",
     "无法读取本实例的设置。请告诉它的管理员。"),
    ("error.kind.deadline_exceeded", "The computation took longer than this instance allows and was stopped. "
     "Shorten the text or ask for less.", "计算超过了本实例允许的时间，已停止。请缩短文本或减少请求的内容。"),
    ("error.kind.device_out_of_memory", "The computation ran out of memory. Shorten the text or ask for fewer "
     "layers.", "计算时内存不足。请缩短文本或减少请求的层数。"),
    ("error.kind.corrupt_model", "The files of this bundled model are damaged. The operator can repair them with "
     "python -m inspector prepare.", "这个内置模型的文件已损坏。管理员可以用 python -m inspector prepare 修复。"),
    ("error.kind.over_budget", "This request asks for more than this instance gives one request. Shorten the text or "
     "ask for less.", "这个请求超过了本实例对单个请求的限额。请缩短文本或减少请求的内容。"),
    # A model spec that names nothing (ModelSpec.parse, inspector.core.bundled, inspector.core.model_folders) ----------
    ("error.spec_empty", "No model was given. Pick a model from the sidebar's menu.",
     "没有指定模型。请从侧边栏的菜单里选一个模型。"),
    ("error.spec_bad_name", "'{spec}' names no {kind} model: after '{kind}:' comes a model's name (letters, digits, "
     "'-', '_' or '.'), never empty and never a path.",
     "“{spec}”不是任何 {kind} 模型：“{kind}:”后面应是模型名（字母、数字、“-”“_”或“.”），不能为空，也不能是路径。"),
    ("error.no_bundled_model", "There is no bundled model '{spec}'. The bundled decoders are {choices}, and "
     "'default' (all-MiniLM-L6-v2).", "没有名为“{spec}”的内置模型。内置解码器有 {choices}，以及“default”"
     "（all-MiniLM-L6-v2）。"),
    ("error.no_shipped_model", "There is no shipped model '{name}'. The shipped models are {choices}.",
     "没有名为“{name}”的随附模型。随附模型有 {choices}。"),
    ("error.bundled_damaged", "The prepared files of {model} are damaged. The operator can prepare them again with "
     "python -m inspector prepare --model {model}.", "{model} 准备好的文件已损坏。管理员可以用 python -m inspector "
     "prepare --model {model} 重新准备。"),
    ("error.tokenizer_not_the_models", "The tokenizer files of {model} belong to another model: they have {tokens} "
     "tokens for an embedding of {rows} rows. Put the model's own tokenizer files in its folder.",
     "{model} 的分词器文件属于另一个模型：它们有 {tokens} 个词元，而嵌入矩阵有 {rows} 行。"
     "请把该模型自己的分词器文件放进它的文件夹。"),
    # Errors a page shows in its language, with the values of what went wrong: the text (inspector.core.forward,
    # inspector.serving.run), the run's limits (inspector.core.deadline, inspector.serving.run and jobs,
    # inspector.core.capture), the model (inspector.core.model_folders and loading, inspector.serving.hosting) ------
    ("error.text_empty", "The text is empty; type or paste a sentence to inspect.",
     "文本为空；请输入或粘贴一句要查看的话。"),
    ("error.layers_not_all_read", "{model} ran {ran} attention layers but declares {declared}: some of its attention "
     "does not go through the inspector's attention function, so its layers cannot be read. Pick another model.",
     "{model} 运行了 {ran} 个注意力层，却声明有 {declared} 个：它的部分注意力没有经过检查器的注意力函数，所以无法读取"
     "它的各层。请换一个模型。"),
    ("error.text_too_long", "The text has {tokens} tokens; {model} reads at most {limit} — shorten it or pick a "
     "long-context model.",
     "这段文本有 {tokens} 个词元；{model} 最多读取 {limit} 个——请缩短文本，或选一个能读长文本的模型。"),
    ("error.text_no_tokens", "The text produced no tokens for this model's tokenizer; type or paste other text.",
     "这段文本在这个模型的分词器下没有产生任何词元；请输入或粘贴别的文本。"),
    ("error.text_invisible", "The text has nothing this model's tokenizer reads — only invisible characters "
     "(zero-width spaces, direction marks, …) or special tokens; type or paste visible text.",
     "这段文本里没有这个模型的分词器能读的内容——只有不可见字符（零宽空格、方向标记等）或特殊词元；请输入或粘贴可见的文本。"),
    ("error.text_too_many_characters", "The text has {characters} characters; this app reads at most {limit} — "
     "paste a shorter passage.", "这段文本有 {characters} 个字符；本应用最多读取 {limit} 个——请粘贴更短的段落。"),
    ("error.weights_too_large", "The text has {tokens} tokens; one layer of {model}'s attention weights would not fit "
     "the {mib} MiB this server gives one request, which allows {limit} tokens — shorten the text.",
     "这段文本有 {tokens} 个词元；{model} 一层的注意力权重放不进本服务器给单个请求的 {mib} MiB（最多允许 {limit} "
     "个词元）——请缩短文本。"),
    ("error.corpus_too_large", "The corpus's first texts already take more than the {tokens} tokens this hosted "
     "instance gives one Heads corpus run with {model} — run it on your own machine (make app).",
     "语料库的前几段文本已经超过本托管实例在 {model} 上给一次 Heads 语料库运行的 {tokens} 个词元——请在自己的电脑上运行"
     "（make app）。"),
    ("error.deadline", "{job} did not finish within the {seconds} s this server gives one request; the server may be "
     "busy or the text long — try again, shorten the text or ask for less.",
     "{job}未能在本服务器给单个请求的 {seconds} 秒内完成；服务器可能正忙，或文本太长——请重试、缩短文本或减少请求的"
     "内容。"),
    ("error.deadline_forward", "{model} on {tokens} tokens", "{model} 处理 {tokens} 个词元"),
    ("error.out_of_memory", "{job} ran out of memory; the machine is short of memory — try a shorter text, ask for "
     "less or pick a smaller model.",
     "{job}内存不足；这台机器的内存不够——请缩短文本、减少请求的内容或选一个更小的模型。"),
    ("error.capture_out_of_memory", "{model} ran out of memory, even with one layer's weights; the server is short of "
     "memory — try a shorter text or a smaller model, or try again later.",
     "即使只保留一层的权重，{model} 仍然内存不足；服务器的内存不够——请缩短文本、换一个更小的模型，或稍后再试。"),
    ("error.model_unknown", "'{model}' is neither a model on this machine nor a valid Hugging Face hub id (like "
     "'openai-community/gpt2'); pick a model from the sidebar's menu.",
     "“{model}”既不是这台机器上的模型，也不是有效的 Hugging Face 模型 id（例如“openai-community/gpt2”）；请从侧边栏的"
     "菜单里选一个模型。"),
    ("error.model_is_file", "'{model}' is a file; a model is a folder with config.json, tokenizer files and "
     "*.safetensors weights.",
     "“{model}”是一个文件；模型应是一个包含 config.json、分词器文件和 *.safetensors 权重的文件夹。"),
    ("error.model_too_large", "{model} has {parameters} parameters, more than the {limit} this instance allows; pick "
     "a smaller model.", "{model} 有 {parameters} 个参数，超过了本实例允许的 {limit} 个；请选一个更小的模型。"),
    ("error.hub_offline", "'{model}' is not in the local Hugging Face cache and the hub cannot be reached; connect "
     "to the network, or pick a bundled model.",
     "本地 Hugging Face 缓存里没有“{model}”，也无法连接 Hugging Face；请连上网络，或选一个内置模型。"),
    ("error.hub_download_failed", "'{model}' could not be downloaded from the Hugging Face hub; try again later, or "
     "pick a bundled model.", "无法从 Hugging Face 下载“{model}”；请稍后再试，或选一个内置模型。"),
    ("error.model_not_offered", "'{model}' is not one of the models this instance offers; pick one from the "
     "sidebar's menu.", "“{model}”不在本实例提供的模型之中；请从侧边栏的菜单里选一个。"),
    ("error.no_such_layer", "Layer {layer} does not exist: {model} has layers 0–{last}.",
     "第 {layer} 层不存在：{model} 只有第 0–{last} 层。"),
    ("error.no_such_head", "Head {head} does not exist: {model} has heads 0–{last} per layer.",
     "第 {head} 个头不存在：{model} 每层只有第 0–{last} 个头。"),
)
