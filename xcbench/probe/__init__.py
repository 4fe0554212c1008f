"""Probes: fio jobs straight at a cell's target (the storage ceiling), and fio itself."""
