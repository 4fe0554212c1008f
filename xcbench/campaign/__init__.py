"""FTS-style transfer campaigns into XRootD gateways (see driver.py for the semantics)."""

from xcbench.campaign.dataset import Dataset
from xcbench.campaign.driver import CampaignHooks, run_campaign
from xcbench.campaign.spec import CampaignSpec, OptimizerSpec

__all__ = ["CampaignHooks", "CampaignSpec", "Dataset", "OptimizerSpec", "run_campaign"]
