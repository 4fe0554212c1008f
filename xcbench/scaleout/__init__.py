"""Running a campaign elsewhere: campaign agents on client hosts over ssh (distributed.py,
agent.py, merge.py) and a real FTS3 server (fts3.py); engine.py picks local or fts3 per matrix."""
