"""Accounts and their secrets (issue 24): where logins come from and how they stay in step.

One module per source or flow, so adding a provider's login is one new file:
`sources/` reads (and writes back) the logins the tools keep (R-LOGIN-3), `token_sync` keeps an
imported login and its tool on one refresh-token family (R-LOGIN-2), `signin` runs a browser
sign-in (R-LOGIN-1) whose provider parts are one `login_<provider>` module each (`login_flow`
says what such a module holds; `pkce` is the pure part).
"""
