"""The serving layer: a hosted instance's policy — the allow-list, parameter cap, memory budget and deadline
(``hosting``). It decides what may run; it never renders."""
