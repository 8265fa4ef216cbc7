# train_stand_in.sh -- a pipeline's training command for the e2e tests:
# says which trigger it trained ($DIR/runs, one line a run, $DIR being
# the folder above its working directory) and writes its model, naming
# the model it started from. While $DIR/hold exists it waits for its
# removal, having said so in $DIR/holding.N: a test crashes things while
# a training runs. Where $DIR/nomodel.N exists, trigger N's training
# succeeds without writing its model.
dir=$(dirname "$PWD")
[ -d "$dir/hold" ] && : > "$dir/holding.$AEGIS_TRIGGER"
while [ -d "$dir/hold" ]; do sleep 0.1; done
echo "trigger $AEGIS_TRIGGER" >> "$dir/runs"
[ -s "$AEGIS_TRAINSET" ] || { echo "no training set" >&2; exit 1; }
[ -e "$dir/nomodel.$AEGIS_TRIGGER" ] && exit 0
echo "model of trigger $AEGIS_TRIGGER from ${AEGIS_PREV_MODEL:-nothing}" \
    > "$AEGIS_MODEL_OUT.tmp"
mv "$AEGIS_MODEL_OUT.tmp" "$AEGIS_MODEL_OUT"
