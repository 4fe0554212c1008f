"""Transfer clients, one per protocol library: XRootD (root://), gfal2 (what FTS itself uses) and
HTTP (https/davs, HTTP-TPC). base.py has what one attempt returns and the factory; threads.py
gives each thread its own client."""
