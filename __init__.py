"""Not a package: the root of an aioflow checkout.

When the checkout's folder is named `aioflow` and a script runs from the folder that holds
it, Python finds this folder first on its path and would import it as an empty namespace
package (`module 'aioflow' has no attribute 'Graph'`). This file makes that import fail
at once with what to do instead.
"""

import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
if __name__ == "aioflow":  # imported under another name (a test runner's), it is inert
    raise ImportError(
        f"'import aioflow' found the checkout folder {_here} itself (a script run from "
        f"{_os.path.dirname(_here)}), not the aioflow package inside it. Run the script "
        f"from another folder (aioflow is installed: pip install -e {_here}), or from "
        f"inside {_here}.")
