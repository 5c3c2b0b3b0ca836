"""Words every page shares: the navigation, how an output change is measured, the attention paths, the
attribution methods' names, an exported chart's provenance and thinned axis labels."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # Navigation, in the order of the menu (app.py) --------------------------------------------------------------------
    ("nav.inspect", "Inspect", "查看"),
    ("nav.heads", "Heads", "注意力头"),
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
    ("export.slide", "Slide 16:9", "16:9 幻灯片"),
    ("export.slide_help", "A 1920 × 1080 PNG: the chart's title, the chart and where it came from — ready for a slide.",
     "1920 × 1080 的 PNG：图表标题、图表和来源说明，可直接放进幻灯片。"),
    ("export.part", "Heads {first}–{last} of {heads} (part {part} of {parts}).",
     "第 {first}–{last} 个头，共 {heads} 个（第 {part} 部分，共 {parts} 部分）。"),
    ("export.model_card", "{model} ({card})", "{model}（{card}）"),
    ("export.card", "{quantization}; licence: {licence}", "{quantization}；许可：{licence}"),
    # Axis labels thinned to fit a narrow column (inspector.charts.base) -----------------------------------------------
    # The hover hints are separate sentences: on screen only, never in an export (inspector.output.export).
    ("chart.thinned.token", "In a narrow column only every k-th token is labelled.",
     "栏太窄时只标出每隔 k 个的词元。"),
    ("chart.thinned.head", "In a narrow column only every k-th head is labelled.",
     "栏太窄时只标出每隔 k 个的注意力头。"),
    ("chart.hover.token", "Hover a cell for its token.", "把鼠标移到格子上可看它的词元。"),
    ("chart.hover.head", "Hover a cell for its head.", "把鼠标移到格子上可看它是哪个头。"),
)
