"""A hosted cluster's own words (issue 32): the run queue's position line and its busy line (inspector/serving/
run_queue.py, views/session.py, views/inspect_run.py), the notice after a replica's failover (views/reconnect.py), a
page's size options clamped, shrunk or refused by the hosted plan (inspector/serving/option_plan.py; issue 45), and
the one-line pages nginx answers itself (inspector/serving/balancer.py, deploy/nginx.conf.template)."""

ENTRIES: tuple[tuple[str, ...], ...] = (
    # The run queue (inspector.serving.run_queue, views/inspect_run.run) -----------------------------------------------
    ("queue.position",
     "Waiting for the model: {running} runs are in progress on this server; yours is number {position} in the queue.",
     "正在等待模型：此服务器上有 {running} 个运行正在进行；你的请求在队列中排第 {position} 位。"),
    ("queue.busy",
     "This server is busy: {waiting} runs are already waiting, so yours was not queued. Try again in a minute.",
     "此服务器正忙：已有 {waiting} 个运行在排队，你的请求未能加入队列。请一分钟后再试。"),
    ("queue.waited_too_long",
     "This server is busy: your run waited {seconds} s in the queue without starting. Try again in a minute.",
     "此服务器正忙：你的请求在队列中等了 {seconds} 秒仍未开始。请一分钟后再试。"),
    # After a failover (views/reconnect.py) ----------------------------------------------------------------------------
    ("reconnect.redrawn",
     "The server that held this page stopped, and another one took over: the view was redrawn from its link, with the "
     "same text, model and options.",
     "原先承载此页面的服务器已停止，另一台服务器接替了它：视图已根据链接重新绘制，文本、模型和选项都与之前相同。"),
    # A page's size options planned against the hosted budget (inspector.serving.option_plan; issue 45) --------------
    ("option.clamped",
     "{option} = {asked} is outside the range {low}–{high} that {model} and this server allow; using {kept}.",
     "{option} = {asked} 超出了 {model} 和此服务器允许的范围 {low}–{high}；改用 {kept}。"),
    ("notice.roles_shrunk",
     "Head roles with R = {repeat} and {batch} sequences on {model} would need about {needed_mib} MiB and "
     "{needed_s} s; this server gives one request {mib} MiB and {seconds} s, so it runs R = {kept_repeat} with "
     "{kept_batch} sequences. Run the app on your own machine (make app) for larger probes.",
     "在 {model} 上用 R = {repeat}、{batch} 条序列识别头的角色，约需 {needed_mib} MiB 和 {needed_s} 秒；"
     "此服务器一次请求只有 {mib} MiB 和 {seconds} 秒，因此改用 R = {kept_repeat}、{kept_batch} 条序列运行。"
     "如需更大的探针，请在自己的机器上运行本应用（make app）。"),
    ("notice.roles_refused",
     "even the smallest head-roles probe (R = 2, 2 sequences) on {model} needs about {needed_mib} MiB and "
     "{needed_s} s, more than the {mib} MiB and {seconds} s this server gives one request — run the app on your "
     "own machine (make app) for this model's roles",
     "即使最小的头角色探针（R = 2，2 条序列）在 {model} 上也约需 {needed_mib} MiB 和 {needed_s} 秒，"
     "超过此服务器一次请求的 {mib} MiB 和 {seconds} 秒——请在自己的机器上运行本应用（make app）"
     "来识别这个模型的头角色。"),
    ("notice.timing_shrunk",
     "Timing every length asked for would need about {needed_mib} MiB and {needed_s} s; this server gives one "
     "request {mib} MiB and {seconds} s, so the lengths {dropped} were left out. Run the app on your own machine "
     "(make app) to time them.",
     "测量所选的全部长度约需 {needed_mib} MiB 和 {needed_s} 秒；此服务器一次请求只有 {mib} MiB 和 "
     "{seconds} 秒，因此省略了长度 {dropped}。如需测量它们，请在自己的机器上运行本应用（make app）。"),
    ("notice.timing_refused",
     "timing attention at n = {n} needs about {needed_mib} MiB and {needed_s} s, more than the {mib} MiB and "
     "{seconds} s this server gives one request — pick shorter lengths, or run the app on your own machine "
     "(make app)",
     "在 n = {n} 上测量注意力约需 {needed_mib} MiB 和 {needed_s} 秒，超过此服务器一次请求的 {mib} MiB 和 "
     "{seconds} 秒——请选择更短的长度，或在自己的机器上运行本应用（make app）。"),
    # The pages nginx answers itself (inspector.serving.balancer) ------------------------------------------------------
    ("balancer.too_long",
     "This link is longer than this server accepts ({limit} characters); links made by the app are at most {link} "
     "characters — open the app and make the link again.",
     "此链接超过了服务器接受的长度（{limit} 个字符）；应用生成的链接最多 {link} 个字符——请打开应用重新生成链接。"),
    ("balancer.unavailable",
     "The app is restarting or every server is busy; reload this page in a few seconds.",
     "应用正在重启或所有服务器都在忙；请几秒钟后重新加载此页面。"),
)
