/*
** The shapes of the Control Plane's ids (spec §2), the one copy of each
** rule: the client checks what it sends and what it is given with them
** (the facade through the binding), and unsandboxd matches path ids and
** checks body ids with the same functions. Each returns 1 for a valid
** id, 0 otherwise (NULL included).
*/
#ifndef UNSB_CPSHAPES_H
#define UNSB_CPSHAPES_H

/* ^ws-[a-f0-9]{12}$ and ^sb-[a-f0-9]{12}$ */
int unsb_valid_workspace_id(const char *s);
int unsb_valid_sandbox_id(const char *s);
/* a template ^[a-z0-9][a-z0-9-]{0,31}$, a checkpoint ^[a-z0-9][a-z0-9-]{0,62}$ */
int unsb_valid_template(const char *s);
int unsb_valid_checkpoint_id(const char *s);
/* a tenant ^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$ */
int unsb_valid_tenant_id(const char *s);
/* an API key's id: 16 lower-case hex digits */
int unsb_valid_key_id(const char *s);

#endif
