"""``mlsubmit migrate``: the files a team moving a legacy job to Vertex AI needs (:mod:`.migration`,
:mod:`.report`), and the trainer checkup (:mod:`.checkup`: the AST of each module, :mod:`.scan`, against the dated
tables of :mod:`.rules`, the requirements and the job's image)."""
