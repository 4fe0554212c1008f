"""Pure figures: units, statistics and the steady state of a level. Numbers in, numbers out: no
I/O, nothing of xcbench but the error type, so every package above can stand on them."""
