"""Where the tests find the LoCoMo dev conversations.

They are not shipped with the package (they are the LoCoMo authors' data). CI and the
development machines have them in ``../shared/data/locomo-dev`` beside the checkout;
``MNEMON_LOCOMO_DEV`` points elsewhere. Tests that need them skip when they are absent,
so a user's clone still runs the rest of the suite.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO_DEV = Path(
    os.environ.get("MNEMON_LOCOMO_DEV", REPO.parent / "shared" / "data" / "locomo-dev")
)
