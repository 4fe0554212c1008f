"""Stopping a campaign: attempts in flight give up (FTS cancels them too), and every file that
never ran gets its final CANCELED row, so nothing is lost."""

from __future__ import annotations

import errno as E
from typing import Any

from xcbench.campaign.rows import transfer_row


class Canceller:
    """Stops a campaign's attempts and closes its files (a part of the campaign)."""

    def __init__(self, campaign: Any):
        self.c = campaign  # xcbench.campaign.dispatch.Campaign: its dispatch state

    def running(self) -> None:
        with self.c.cond:
            live = list(self.c.live.values())
        for _, progress, client in live:
            progress.cancelled = True
            try:
                client.cancel()
            except Exception:  # best effort: the attempt still ends at its timeout
                pass

    def rest(self, now: float) -> None:
        """Files never finished because the campaign stopped: a CANCELED final row each."""
        with self.c.cond:
            rest = sorted({j.seq: j.retry for j in list(self.c.ready) + self.c.delayed}.items())
            self.c.ready.clear()
            self.c.delayed.clear()
        rows = []
        for seq, retry in rest:
            if seq in self.c.final:
                continue
            self.c.final[seq] = "CANCELED"
            i = self.c.index(seq)
            rows.append(transfer_row(
                cell_id=self.c.cell_id, campaign_id=self.c.spec.campaign_id,
                concurrency=self.c.spec.concurrency, repeat=self.c.spec.repeat,
                transfer_id=f"{self.c.spec.campaign_id}-{seq:06d}-{retry}", file_index=i, retry=retry,
                source=self.c.urls_of(seq)[0], destination=self.c.urls_of(seq)[1], mode=self.c.spec.mode,
                client=self.c.kind, nstreams=self.c.spec.streams, file_size=self.c.dataset.size(i),
                transferred=0, start_time=None, finish_time=now, file_state="CANCELED",
                error_code=E.ECANCELED, error_scope="TRANSFER", error_phase="TRANSFER_PREPARATION",
                reason="campaign stopped before this file was transferred",
                direction=self.c.direction_of(seq)))
        self.c.out.add("transfers", rows)
