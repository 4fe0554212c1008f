"""Stopping a campaign: attempts in flight give up (FTS cancels them too), and every file that
never ran gets its final CANCELED row, so nothing is lost."""

from __future__ import annotations

import errno as E
from typing import Any

from xcbench.campaign.rows import transfer_row


class CancelMixin:
    """Mixed into :class:`xcbench.campaign.dispatch.Campaign` (which sets these attributes)."""
    cond: Any
    live: dict
    ready: Any
    delayed: list
    final: dict
    spec: Any
    dataset: Any
    kind: str
    cell_id: str
    out: Any
    index: Any
    source_url: Any
    dest_url: Any
    direction_of: Any

    def _cancel_running(self) -> None:
        with self.cond:
            live = list(self.live.values())
        for _, progress, client in live:
            progress.cancelled = True
            try:
                client.cancel()
            except Exception:  # best effort: the attempt still ends at its timeout
                pass

    def urls_of(self, seq: int) -> tuple[str, str]:
        """(source, destination) of transfer ``seq`` as its rows name them."""
        return self.source_url(self.index(seq)), self.dest_url(seq)

    def _cancel_rest(self, now: float) -> None:
        """Files never finished because the campaign stopped: a CANCELED final row each."""
        with self.cond:
            rest = sorted({j.seq: j.retry for j in list(self.ready) + self.delayed}.items())
            self.ready.clear()
            self.delayed.clear()
        rows = []
        for seq, retry in rest:
            if seq in self.final:
                continue
            self.final[seq] = "CANCELED"
            i = self.index(seq)
            rows.append(transfer_row(
                cell_id=self.cell_id, campaign_id=self.spec.campaign_id,
                concurrency=self.spec.concurrency, repeat=self.spec.repeat,
                transfer_id=f"{self.spec.campaign_id}-{seq:06d}-{retry}", file_index=i, retry=retry,
                source=self.urls_of(seq)[0], destination=self.urls_of(seq)[1], mode=self.spec.mode,
                client=self.kind, nstreams=self.spec.streams, file_size=self.dataset.size(i),
                transferred=0, start_time=None, finish_time=now, file_state="CANCELED",
                error_code=E.ECANCELED, error_scope="TRANSFER", error_phase="TRANSFER_PREPARATION",
                reason="campaign stopped before this file was transferred",
                direction=self.direction_of(seq)))
        self.out.add("transfers", rows)
