"""FTS-style transfer campaigns into XRootD gateways (see dispatch.py for the semantics).

dispatch.py: the job queue, attempts, retries and cancel (:class:`Campaign`, run_campaign);
monitor.py: the timeline, optimizer ticks, live view and the CAMPAIGN row.
"""

from xcbench.campaign.dataset import Dataset
from xcbench.campaign.dispatch import Campaign, CampaignHooks, run_campaign
from xcbench.campaign.spec import CampaignSpec, OptimizerSpec

__all__ = ["Campaign", "CampaignHooks", "CampaignSpec", "Dataset", "OptimizerSpec", "run_campaign"]
