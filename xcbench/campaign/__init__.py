"""FTS-style transfer campaigns into XRootD gateways (see dispatch.py for the semantics).

dispatch.py: the job queue, attempts, retries and cancel (:class:`Campaign`, run_writes);
monitor.py: the timeline, optimizer ticks, live view and the CAMPAIGN row; reads.py: read and
mixed campaigns (``direction``) on the same dispatcher.
"""

from xcbench.campaign.dataset import Dataset
from xcbench.campaign.dispatch import Campaign, CampaignHooks
from xcbench.campaign.reads import run_campaign  # writes (dispatch.py), reads and mixed
from xcbench.campaign.spec import CampaignSpec, OptimizerSpec

__all__ = ["Campaign", "CampaignHooks", "CampaignSpec", "Dataset", "OptimizerSpec", "run_campaign"]
