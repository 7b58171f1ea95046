"""The install on a live cluster: what ``setup init | status | reset`` apply, inspect and remove.

:mod:`.lifecycle` carries out the three commands; :mod:`.chart` says where the install's own
objects and the controller's image values come from; :mod:`.deps` names what the install needs
besides them (Kubeflow Trainer and JobSet) and :mod:`.trainer` installs or removes those, with
charts rendered by :mod:`.helm`; :mod:`.ownership` tells objects nvcrectl made from look-alikes,
and :mod:`.holdings` finds what a namespace or a CRD holds that nvcrectl did not make, before a
reset deletes it.
"""
