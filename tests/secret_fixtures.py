"""Fake but realistically shaped secrets, and the six-secret-file repository of issue 10.

Values are assembled from parts so this file itself does not look like a leaked key to
scanners; each value is what a real key of that kind looks like.
"""

from __future__ import annotations

AWS_KEY = "AKIA" + "Q3EGRT7XMPLE2WZ5"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzEXAMPKE9Q"
GITHUB_TOKEN = "ghp_" + "R8s1x2Vq9LmN3bC4dE5fG6hJ7kL8mN9pQ0rS"
GITLAB_TOKEN = "glpat-" + "x7Yq2Zr9Tb4Kc1Vw8Nm3"
SLACK_TOKEN = "xoxb-" + "2046382910-2049384758-Qx7Zr9Tb4Kc1Vw8Nm3Lp"
STRIPE_KEY = "sk_live_" + "51H8xQ2eZvKYlo2C7Rq9Tb4Kc1Vw8Nm3"
OPENAI_KEY = "sk-proj-" + "Qx7Zr9Tb4Kc1Vw8Nm3Lp5Hs2Jd6Fg0Ay1Bz4Cx"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
DB_PASSWORD = "Tr0ub4dor&3xK9q"
KEY_BODY = [
    "MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2pUJnU9pc0Xq0bwz1r8h0sUq7h1Y",
    "k9Gp5mYwq1hU7oXc1Gkz0Z7mQ2lW6Y0zr0p5u8HqfXk2vC1bA9kU4tD7sJ3eR2yQ",
    "Pq8wN5xL1mK3jH7gF2dS9aZ4cV6bN0mQ1wE3rT5yU8iO2pA4sD6fG9hJ1kL3zX5c",
]
PRIVATE_KEY_BLOCK = "\n".join(
    ["-----BEGIN RSA PRIVATE KEY-----", *KEY_BODY, "-----END RSA PRIVATE KEY-----"]
)
SERVICE_ACCOUNT_KEY = "\\n".join(
    ["-----BEGIN PRIVATE KEY-----", *KEY_BODY, "-----END PRIVATE KEY-----", ""]
)
PRIVATE_KEY_ID = "5f1c0a9d3e7b2c4a6f8e0d1b3c5a7e9f2d4b6c8a"

# Every value that must never come back from the index, one per secret.
SECRET_VALUES = (
    AWS_KEY,
    AWS_SECRET,
    GITHUB_TOKEN,
    GITLAB_TOKEN,
    SLACK_TOKEN,
    STRIPE_KEY,
    OPENAI_KEY,
    JWT,
    DB_PASSWORD,
    *KEY_BODY,
    PRIVATE_KEY_ID,
)

SETTINGS_PY = f'''"""Deployment settings for the billing service."""

AWS_ACCESS_KEY_ID = "{AWS_KEY}"
AWS_SECRET_ACCESS_KEY = "{AWS_SECRET}"
GITHUB_TOKEN = "{GITHUB_TOKEN}"
DATABASE_PASSWORD = "{DB_PASSWORD}"


def connection_settings():
    """Where the billing database lives and how to reach its private key store."""
    return {{"host": "db.internal", "port": 5432, "user": "billing"}}
'''

KEYS_MODULE_PY = f'''"""Signing helpers with an embedded private key (real code does it)."""

SIGNING_KEY = """{PRIVATE_KEY_BLOCK}
"""

TOKENS = ["{GITLAB_TOKEN}", "{SLACK_TOKEN}", "{STRIPE_KEY}", "{OPENAI_KEY}"]
SESSION = "{JWT}"


def sign_payload(payload: bytes) -> bytes:
    """Sign a payload with the embedded private key."""
    return payload[::-1]
'''

CREDENTIALS_JSON = f"""{{
  "type": "service_account",
  "project_id": "billing-prod",
  "private_key_id": "{PRIVATE_KEY_ID}",
  "private_key": "{SERVICE_ACCOUNT_KEY}",
  "client_email": "billing@billing-prod.iam.gserviceaccount.com"
}}
"""

SIX_SECRET_FILES: dict[str, str | bytes] = {
    "credentials.json": CREDENTIALS_JSON,
    "app/settings.py": SETTINGS_PY,
    "app/keys.py": KEYS_MODULE_PY,
    "id_rsa.txt": PRIVATE_KEY_BLOCK + "\n",
    "secrets.env.yaml": f"database:\n  password: {DB_PASSWORD}\n"
    f"aws_secret_access_key: {AWS_SECRET}\n",
    "config/credentials.ini": f"[default]\naws_access_key_id = {AWS_KEY}\n"
    f"aws_secret_access_key = {AWS_SECRET}\n",
    # Skipped today only because their extension is unknown: must stay skipped by name.
    ".env": f"GITHUB_TOKEN={GITHUB_TOKEN}\n",
    ".ssh/id_rsa": PRIVATE_KEY_BLOCK + "\n",
    "server.pem": PRIVATE_KEY_BLOCK + "\n",
    "app/billing.py": 'def total(lines):\n    """Sum of invoice lines."""\n    return sum(lines)\n',
}
