"""A hosted cluster's own words (issue 32): the run queue's position line and its busy line (inspector/serving/
run_queue.py, views/session.py, views/inspect_run.py), the notice after a replica's failover (views/reconnect.py),
and the one-line pages nginx answers itself (inspector/serving/balancer.py, deploy/nginx.conf.template)."""

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
    # The pages nginx answers itself (inspector.serving.balancer) ------------------------------------------------------
    ("balancer.too_long",
     "This link is longer than this server accepts ({limit} characters); links made by the app are at most {link} "
     "characters — open the app and make the link again.",
     "此链接超过了服务器接受的长度（{limit} 个字符）；应用生成的链接最多 {link} 个字符——请打开应用重新生成链接。"),
    ("balancer.unavailable",
     "The app is restarting or every server is busy; reload this page in a few seconds.",
     "应用正在重启或所有服务器都在忙；请几秒钟后重新加载此页面。"),
)
