(define-module (inventory store))

(define (make-store capacity)
  (list capacity '()))

(define (store-add store name count)
  (let ((items (cadr store)))
    (if (>= (length items) (car store))
        store
        (list (car store) (cons (cons name count) items)))))

(define-syntax when-positive
  (syntax-rules ()
    ((_ n body ...)
     (if (> n 0) (begin body ...)))))

(define* (store-count store name #:key (default 0))
  (let ((hit (assoc name (cadr store))))
    (if hit
        (cdr hit)
        default)))

(define-record-type item
  (make-item name count)
  item?
  (name item-name)
  (count item-count))

(library (inventory util)
  (export twice)
  (import (rnrs))
  (define (twice x)
    (* 2 x)))
