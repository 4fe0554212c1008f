"""The network under the chain: the iperf3 baseline and the host TCP audit."""
