const checks = {
    call: true,
    answer: true,
    rule: true,
};
void checks;
export {};
