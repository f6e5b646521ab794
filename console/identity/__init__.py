"""Signing in with a company's identity provider: OpenID Connect (oidc) or an LDAP directory (ldap), their groups
mapped to Kazami's roles (roles).
Local accounts (console.views.access) stay beside it, or only as a break-glass admin when KAZAMI_OIDC_ONLY is set."""
