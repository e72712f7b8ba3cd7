/*
** Images, shared by images.c (publish, the archive and the document),
** images_use.c (list, get, delete, clone, spawn) and images_share.c
** (lock, visibility, access lists, transfer). An image is visible to its
** owner, to every key when public or unlisted, and to the keys of its
** access list; every other key gets 404, as for an unknown id.
*/
#ifndef UX_IMAGES_H
#define UX_IMAGES_H

#include "server/exec/routes.h"

/* DATA/images/<id>.tar.gz. */
int ux_image_path(ux_req *r, const char *id, char *out, size_t len);
/* Makes DATA/images: 0, or -1 after a 500. */
int ux_image_dir(ux_req *r);
int ux_image_visible(const json_t *doc, const char *key);
/* The wire form for key: the access list is shown to the owner only. */
json_t *ux_image_present(const json_t *doc, const char *key);
/* The image doc when r's key may see it, else NULL after a 404. */
json_t *ux_image_get_visible(ux_req *r, const char *id);
json_t *ux_image_doc(const char *id, const char *name, const char *desc, const char *type,
                     const char *source, const char *owner, long size);
/* Stores doc (stolen) whose archive is in place; answers 201, or 500
** and removes the archive. */
int ux_image_store(ux_req *r, json_t *doc, const char *arch);

int ux_h_image_publish(ux_req *r, const char *id);
int ux_h_images_list(ux_req *r, const char *id);
int ux_h_images_owned(ux_req *r, const char *id);
int ux_h_images_shared(ux_req *r, const char *id);
int ux_h_images_public(ux_req *r, const char *id);
int ux_h_image_get(ux_req *r, const char *id);
int ux_h_image_delete(ux_req *r, const char *id);
int ux_h_image_clone(ux_req *r, const char *id);
int ux_h_image_spawn(ux_req *r, const char *id);
int ux_h_image_lock(ux_req *r, const char *id);
int ux_h_image_unlock(ux_req *r, const char *id);
int ux_h_image_visibility(ux_req *r, const char *id);
int ux_h_image_grant(ux_req *r, const char *id);
int ux_h_image_revoke(ux_req *r, const char *id);
int ux_h_image_trusted(ux_req *r, const char *id);
int ux_h_image_transfer(ux_req *r, const char *id);
/* lenient: POST /images/{id}/access {api_key}, DELETE /images/{id}/access/{key} */
int ux_h_image_access_add(ux_req *r, const char *id);
int ux_h_image_access_del(ux_req *r, const char *id);

#endif
