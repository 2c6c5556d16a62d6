/*
 * progress_tf.h - progress from TensorFlow's and Keras' own log lines, for
 * trainers that know nothing of the agent (an injected agent, docs/agent.md).
 *
 * Built-in shapes, tried on every stdout and stderr line that is neither a
 * TFJ_PROGRESS record nor a match of the user's --progress-regex:
 *
 *  - Keras progress lines (Keras 2 and 3, model.fit verbose 1 or 2, and
 *    keras.utils.Progbar), e.g.
 *        Epoch 2/5
 *        120/469 ━━━━━━━━━━━━━━━━━━━━ 2s 6ms/step - accuracy: 0.81 - loss: 0.52
 *        469/469 [======] - 3s 6ms/step - loss: 0.5 - accuracy: 0.8
 *    `S/T` at the start gives the step within the epoch; with a preceding
 *    `Epoch E/N` line the global step is (E-1)*T + S and the total N*T
 *    (only while T stays that of the epoch's first line: evaluate's and
 *    predict's bars have their own T and no Epoch line). `loss` and
 *    `accuracy` (also `acc`, `sparse_categorical_accuracy`,
 *    `categorical_accuracy`, `binary_accuracy`) are read from the ` - name:
 *    value` items; `val_` items are validation, not training, and ignored.
 *  - tf.estimator / TF1 logging, e.g.
 *        INFO:tensorflow:loss = 0.4321, step = 200 (0.25 sec)
 *        INFO:tensorflow:Saving dict for global step 600: accuracy = 0.85,
 *            global_step = 600, loss = 0.41
 *    `name = value` items: loss, step, global_step, accuracy. These lines
 *    never say the training length, so they give no total.
 *
 * Anything else, or a number that does not parse completely, yields nothing:
 * unparseable output is never an error.
 */
#ifndef TFJ_PROGRESS_TF_H
#define TFJ_PROGRESS_TF_H

#include <stddef.h>
#include <stdint.h>

#include <tfj/progrec.h>

/*
 * Named metrics: every numeric item of a Keras or estimator line (`- mae:
 * 0.31`, `val_loss: 0.6`, `auc = 0.9`) but the step, as the line named
 * it. Bounded: the first TFJ_PROGREC_METRICS_MAX items of a line, names of
 * at most TFJ_PROGREC_METRIC_NAME - 1 characters ([A-Za-z0-9_], longer
 * names are skipped), the same bounds the operator's decoder enforces.
 */
struct tfj_progress_metric {
	char name[TFJ_PROGREC_METRIC_NAME];
	double value;   /* finite */
};
struct tfj_progress_metrics {
	struct tfj_progress_metric m[TFJ_PROGREC_METRICS_MAX];
	unsigned n;
};

/*
 * What earlier lines said: the current Keras epoch (0 = none seen yet), the
 * epoch count of its `Epoch E/N` line and the steps per epoch of its first
 * progress line (0 = none yet); and the named metrics of the last line
 * parsed (n = 0 when it had none).
 */
struct tfj_progress_tf {
	int64_t epoch;
	int64_t epochs;
	int64_t per_epoch;
	struct tfj_progress_metrics named;
};

/*
 * Parses one NUL-terminated line (no newline). 0 with *out filled (at
 * least one field), TFJ_ENOTFOUND otherwise. Updates *st on `Epoch E/N`.
 */
int tfj_progress_tf_parse(struct tfj_progrec *out, struct tfj_progress_tf *st,
			  const char *line);

#endif
