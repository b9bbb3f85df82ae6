// graphPublishState and graphPublishResult are left out of accepts: the
// schema's if/then (connectUrl with signing_in, the URLs with published)
// is lost by the generator, so its types are wider than the contract; the
// hand types keep the condition, and Within still holds them inside the
// schema.
const accepts = true;
const within = true;
const covered = true;
void within;
void accepts;
void covered;
export {};
