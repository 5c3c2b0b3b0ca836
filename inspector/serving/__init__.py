"""The serving layer: a hosted instance's policy — the allow-list, parameter cap, memory budget and deadline
(``hosting``), the per-process cap on concurrent forwards with its visible queue (``run_queue``), and what the load
balancer in front of a cluster answers itself (``balancer``). It decides what may run; it never renders."""
